// Independent reader for the zarr tests: opens dense arrays of a Zarr v3 store with zarrita and
// prints {"<array path>": {"dtype": ..., "shape": [...], "values": ["<decimal>", ...]}} as JSON
// (integers as decimal strings so 64-bit words survive). Usage: node read_dense.mjs STORE PATH...
import * as zarr from "zarrita";
import { FileSystemStore } from "@zarrita/storage";

const [root, ...paths] = process.argv.slice(2);
const store = new FileSystemStore(root);
const out = {};
for (const path of paths) {
  const array = await zarr.open(zarr.root(store).resolve(path), { kind: "array" });
  const chunk = await zarr.get(array);
  out[path] = { dtype: array.dtype, shape: chunk.shape, values: Array.from(chunk.data, (v) => String(v)) };
}
process.stdout.write(JSON.stringify(out));
