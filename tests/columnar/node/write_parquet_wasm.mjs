// Writes a Parquet file with parquet-wasm (the Rust Apache Parquet writer compiled to
// WebAssembly) from a JSON description:
// {"compression": "ZSTD"|"SNAPPY"|"UNCOMPRESSED", "dictionary": bool, "writerVersion": "V1"|"V2",
//  "rowGroupSize": n, "columns": [{"name", "type": "int8"…"uint64"|"float"|"double"|"bool"|"string",
//  "data": [...]}]}
// null entries are nulls; 64-bit integers are decimal strings (converted to BigInt).
import { readFileSync, writeFileSync } from 'node:fs'
import { Table, tableToIPC } from 'apache-arrow'
import { Compression, Table as WasmTable, WriterPropertiesBuilder, WriterVersion, writeParquet } from 'parquet-wasm'
import { arrowVector } from './arrow_columns.mjs'

const [out, specPath] = process.argv.slice(2)
const spec = JSON.parse(readFileSync(specPath, 'utf8'))
const vectors = {}
for (const c of spec.columns) vectors[c.name] = arrowVector(c)
const table = new Table(vectors)
const props = new WriterPropertiesBuilder()
  .setCompression(Compression[spec.compression ?? 'ZSTD'])
  .setDictionaryEnabled(spec.dictionary ?? true)
  .setWriterVersion(WriterVersion[spec.writerVersion ?? 'V1'])
  .setMaxRowGroupSize(spec.rowGroupSize ?? 1000)
  .build()
writeFileSync(out, writeParquet(WasmTable.fromIPCStream(tableToIPC(table, 'stream')), props))
