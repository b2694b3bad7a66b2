// `worker_threads` as pino sees it in the CLI's bundle (scripts/build.mjs): pino reads `isMainThread` alone,
// to decide whether an asynchronous destination is flushed at exit. multus-ipmgr runs pino on the main
// thread only, with a synchronous destination (src/eni/process/logger.ts); loading Node's worker machinery at every
// start for that one flag bought nothing.
exports.isMainThread = true;
