// Flags the service's Node.js runs with, wherever it is started: `npm start` (scripts/start.mjs),
// the `svc` bin (its first line, src/cli.ts, spells them out again) and the benchmark.
//
// --max-semi-space-size=32: a young generation of 2 x 32 MB instead of 2 x 16 MB. A request or a
// delivery allocates a few KB that die young; with the default, the collector ran so often that
// objects still in use (a claim's rows, requests in flight) were copied twice and then promoted,
// and young-generation collections took about a tenth of the service's CPU. Measured in
// alternating runs on the 2-core benchmark machine: CPU per read 39.0 -> 35.6 us, per delivery
// 67.4 -> 62.0 us; peak RSS through the delivery benchmark 247 -> 285 MB (64 MB gained a little
// more and took the peak to 335 MB). docs/performance.md has the figures.
export const NODE_FLAGS = ['--max-semi-space-size=32'];
