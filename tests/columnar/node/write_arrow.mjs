// Writes an Arrow IPC file with apache-arrow from a JSON description:
// {"batches": [{"columns": [{"name", "type": "int8"|…|"uint64"|"float"|"double"|"bool"|"string", "data": [...]}]}]}
// 64-bit integer data are decimal strings (converted to BigInt).
import { writeFileSync, readFileSync } from 'node:fs'
import { RecordBatch, Table, makeData, Struct, Field, Schema, tableToIPC } from 'apache-arrow'
import { arrowVector } from './arrow_columns.mjs'

const [out, specPath] = process.argv.slice(2)
const spec = JSON.parse(readFileSync(specPath, 'utf8'))
const batches = spec.batches.map((b) => {
  const fields = []
  const children = []
  for (const c of b.columns) {
    const vector = arrowVector(c)
    fields.push(new Field(c.name, vector.type, true))
    children.push(vector.data[0])
  }
  const schema = new Schema(fields)
  const length = children.length ? children[0].length : 0
  return new RecordBatch(schema, makeData({ type: new Struct(fields), length, children }))
})
writeFileSync(out, tableToIPC(new Table(batches), 'file'))
