// The JSON column descriptions the cross-check writers share: {"name", "type": "int8"…"uint64" |
// "float" | "double" | "bool" | "string", "data": [...]}, null entries being nulls and 64-bit
// integers decimal strings. `arrowVector(column)` gives the apache-arrow vector of one.
import {
  Bool, Float32, Float64, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Utf8, vectorFromArray,
} from 'apache-arrow'

const types = {
  int8: () => new Int8(), int16: () => new Int16(), int32: () => new Int32(), int64: () => new Int64(),
  uint8: () => new Uint8(), uint16: () => new Uint16(), uint32: () => new Uint32(), uint64: () => new Uint64(),
  float: () => new Float32(), double: () => new Float64(), bool: () => new Bool(), string: () => new Utf8(),
}

export function arrowVector(column) {
  const wide = column.type === 'int64' || column.type === 'uint64'
  const data = wide ? column.data.map((v) => (v === null ? null : BigInt(v))) : column.data
  return vectorFromArray(data, types[column.type]())
}
