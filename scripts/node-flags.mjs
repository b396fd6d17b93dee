// Flags the service's Node.js runs with, wherever it is started: `npm start` (scripts/start.mjs),
// the `svc` bin (its first line, src/cli/main.ts, spells them out again) and the benchmark.
//
// --max-semi-space-size=32: a young generation of 2 x 32 MB instead of 2 x 16 MB. A request or a
// delivery allocates a few KB that die young; with the default, the collector ran so often that
// objects still in use (a claim's rows, requests in flight) were copied twice and then promoted.
// The larger young generation costs peak memory; bench/notes.md has the figures.
export const NODE_FLAGS = ['--max-semi-space-size=32'];
