// Reads a Parquet file with hyparquet (+ hyparquet-compressors) and prints
// {"columns": {name: [value...]}, "row_groups": [num_rows...], "created_by": ..., "kv": {...}}
// with every value as a string ("null" for nulls), so 64-bit integers survive JSON.
import { readFileSync } from 'node:fs'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

const bytes = readFileSync(process.argv[2])
const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)
const metadata = parquetMetadata(file)
const rows = await parquetReadObjects({ file, compressors, utf8: true })
const names = metadata.schema.slice(1).map((e) => e.name)
const columns = {}
for (const name of names) columns[name] = rows.map((r) => (r[name] === null || r[name] === undefined ? null : String(r[name])))
const kv = {}
for (const e of metadata.key_value_metadata ?? []) kv[e.key] = e.value ?? null
console.log(JSON.stringify({
  columns,
  row_groups: metadata.row_groups.map((g) => Number(g.num_rows)),
  created_by: metadata.created_by ?? null,
  kv,
}))
