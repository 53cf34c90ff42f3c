// Writes a Parquet file with parquet-wasm (the Rust Apache Parquet writer compiled to
// WebAssembly) from a JSON description:
// {"compression": "ZSTD"|"SNAPPY"|"UNCOMPRESSED", "dictionary": bool, "writerVersion": "V1"|"V2",
//  "rowGroupSize": n, "columns": [{"name", "type": "int8"…"uint64"|"float"|"double"|"bool"|"string",
//  "data": [...]}]}
// null entries are nulls; 64-bit integers are decimal strings (converted to BigInt).
import { readFileSync, writeFileSync } from 'node:fs'
import {
  Bool, Float32, Float64, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Utf8,
  Table, tableToIPC, vectorFromArray,
} from 'apache-arrow'
import { Compression, Table as WasmTable, WriterPropertiesBuilder, WriterVersion, writeParquet } from 'parquet-wasm'

const [out, specPath] = process.argv.slice(2)
const spec = JSON.parse(readFileSync(specPath, 'utf8'))
const types = {
  int8: () => new Int8(), int16: () => new Int16(), int32: () => new Int32(), int64: () => new Int64(),
  uint8: () => new Uint8(), uint16: () => new Uint16(), uint32: () => new Uint32(), uint64: () => new Uint64(),
  float: () => new Float32(), double: () => new Float64(), bool: () => new Bool(), string: () => new Utf8(),
}
const vectors = {}
for (const c of spec.columns) {
  const wide = c.type === 'int64' || c.type === 'uint64'
  const data = wide ? c.data.map((v) => (v === null ? null : BigInt(v))) : c.data
  vectors[c.name] = vectorFromArray(data, types[c.type]())
}
const table = new Table(vectors)
const props = new WriterPropertiesBuilder()
  .setCompression(Compression[spec.compression ?? 'ZSTD'])
  .setDictionaryEnabled(spec.dictionary ?? true)
  .setWriterVersion(WriterVersion[spec.writerVersion ?? 'V1'])
  .setMaxRowGroupSize(spec.rowGroupSize ?? 1000)
  .build()
writeFileSync(out, writeParquet(WasmTable.fromIPCStream(tableToIPC(table, 'stream')), props))
