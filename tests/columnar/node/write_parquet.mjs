// Writes a Parquet file with hyparquet-writer from a JSON description:
// {"codec": "SNAPPY"|"UNCOMPRESSED"|"GZIP", "rowGroupSize": n, "pageSize": n,
//  "columns": [{"name", "type", "encoding"?, "nullable"?, "data": [...]}]}
// INT64 data are decimal strings (converted to BigInt); GZIP pages use node's zlib.
import { readFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { parquetWriteFile } from 'hyparquet-writer'

const [out, specPath] = process.argv.slice(2)
const spec = JSON.parse(readFileSync(specPath, 'utf8'))
const columnData = spec.columns.map((c) => ({
  name: c.name,
  type: c.type,
  nullable: c.nullable ?? true,
  ...(c.encoding ? { encoding: c.encoding } : {}),
  data: c.type === 'INT64' ? c.data.map((v) => (v === null ? null : BigInt(v))) : c.data,
}))
parquetWriteFile({
  filename: out,
  columnData,
  codec: spec.codec ?? 'SNAPPY',
  compressors: { GZIP: (bytes) => new Uint8Array(gzipSync(bytes)) },
  rowGroupSize: spec.rowGroupSize ?? 1000,
  ...(spec.pageSize ? { pageSize: spec.pageSize } : {}),
  statistics: spec.statistics ?? true,
})
