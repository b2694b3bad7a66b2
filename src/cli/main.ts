import { exitWith, run } from "./dispatch.js";

exitWith(await run(process.argv.slice(2), new URL("./sim.mjs", import.meta.url).href));
