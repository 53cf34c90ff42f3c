// Writes an Arrow IPC file with apache-arrow from a JSON description:
// {"batches": [{"columns": [{"name", "type": "int8"|…|"uint64"|"float"|"double"|"bool"|"string", "data": [...]}]}]}
// 64-bit integer data are decimal strings (converted to BigInt).
import { writeFileSync, readFileSync } from 'node:fs'
import {
  Bool, Float32, Float64, Int8, Int16, Int32, Int64, RecordBatch, Table, Uint8, Uint16, Uint32, Uint64, Utf8,
  makeData, Struct, Field, Schema, tableToIPC, vectorFromArray,
} from 'apache-arrow'

const [out, specPath] = process.argv.slice(2)
const spec = JSON.parse(readFileSync(specPath, 'utf8'))
const types = {
  int8: () => new Int8(), int16: () => new Int16(), int32: () => new Int32(), int64: () => new Int64(),
  uint8: () => new Uint8(), uint16: () => new Uint16(), uint32: () => new Uint32(), uint64: () => new Uint64(),
  float: () => new Float32(), double: () => new Float64(), bool: () => new Bool(), string: () => new Utf8(),
}
const batches = spec.batches.map((b) => {
  const fields = []
  const children = []
  for (const c of b.columns) {
    const type = types[c.type]()
    const wide = c.type === 'int64' || c.type === 'uint64'
    const data = wide ? c.data.map((v) => (v === null ? null : BigInt(v))) : c.data
    const vector = vectorFromArray(data, type)
    fields.push(new Field(c.name, type, true))
    children.push(vector.data[0])
  }
  const schema = new Schema(fields)
  const length = children.length ? children[0].length : 0
  return new RecordBatch(schema, makeData({ type: new Struct(fields), length, children }))
})
writeFileSync(out, tableToIPC(new Table(batches), 'file'))
