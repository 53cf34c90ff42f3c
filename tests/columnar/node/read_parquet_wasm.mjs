// Reads a Parquet file with parquet-wasm (the Rust Apache Parquet implementation compiled to
// WebAssembly), converts it to an apache-arrow Table through an IPC stream, and prints
// {"columns": {name: [value...]}, "names": [name...], "types": {name: arrow type}, "kv": {...}}
// with every value as a string (null for nulls), so 64-bit integers and floats survive JSON;
// `kv` is the file's key-value metadata as parquet-wasm carries it into the Arrow schema.
import { readFileSync } from 'node:fs'
import { tableFromIPC } from 'apache-arrow'
import { readParquet } from 'parquet-wasm'

const bytes = new Uint8Array(readFileSync(process.argv[2]))
const table = tableFromIPC(readParquet(bytes).intoIPCStream())
const names = table.schema.fields.map((f) => f.name)
const columns = {}
const types = {}
for (const [i, field] of table.schema.fields.entries()) {
  const vector = table.getChildAt(i)
  const values = []
  for (let r = 0; r < table.numRows; ++r) {
    const v = vector.get(r)
    values.push(v === null || v === undefined ? null : String(v))
  }
  columns[field.name] = values
  types[field.name] = String(field.type)
}
const kv = {}
for (const [k, v] of table.schema.metadata ?? new Map()) kv[k] = v ?? null
console.log(JSON.stringify({ columns, names, types, kv }))
