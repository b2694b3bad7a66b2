export type { SimCall } from "./call-log.js";
export { WorldError } from "./errors/world-error.js";
export type { FailNextRule, Faults } from "./faults.js";
export type { SimAddress, SimEni, SimReservation, SimState } from "./sim-state.js";
export type { SimulatorHandle, SimulatorOptions } from "./simulator.js";
export { startSimulator } from "./simulator.js";
export type { World } from "./world.js";
export { loadWorldFile, parseWorld } from "./world.js";
