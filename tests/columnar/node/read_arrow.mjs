// Reads an Arrow IPC file with apache-arrow and prints
// {"fields": [{name, type, nullable}], "batches": [length...], "columns": {name: [value...]}}
// with every value as a string (booleans "true"/"false") or null.
import { readFileSync } from 'node:fs'
import { tableFromIPC } from 'apache-arrow'

const table = tableFromIPC(readFileSync(process.argv[2]))
const columns = {}
for (const field of table.schema.fields) {
  const vector = table.getChild(field.name)
  const values = []
  for (let i = 0; i < vector.length; ++i) {
    const v = vector.get(i)
    values.push(v === null || v === undefined ? null : String(v))
  }
  columns[field.name] = values
}
console.log(JSON.stringify({
  fields: table.schema.fields.map((f) => ({ name: f.name, type: String(f.type), nullable: f.nullable })),
  batches: table.batches.map((b) => b.numRows),
  columns,
}))
