// `assert` as sonic-boom (pino's destination) sees it in the CLI's bundle (scripts/build.mjs): it calls
// assert(value, message) alone, and Node's module loads eight more of Node's own (util/colors, the
// AssertionError machinery) at every start for that one check.
module.exports = function assert(value, message) {
  if (value) return;
  const error = new Error(message ?? "assertion failed");
  error.code = "ERR_ASSERTION";
  throw error;
};
