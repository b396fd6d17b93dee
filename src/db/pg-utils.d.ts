// node-pg's parameter conversion (pg/lib/utils.js), which its package does not type.
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): unknown };
  export default utils;
}
