// pino's `transport` as the CLI's bundle has it (scripts/build.mjs): pino loads the real one, and with it
// thread-stream and Node's worker_threads, as soon as pino itself is loaded, though only pino({ transport })
// uses it. multus-ipmgr logs JSON lines to stdout (src/eni/process/logger.ts) and never asks for a
// transport, so no start needs that load.
module.exports = function transport() {
  throw new Error("pino transports are not part of multus-ipmgr's bundle: it logs JSON lines to stdout");
};
