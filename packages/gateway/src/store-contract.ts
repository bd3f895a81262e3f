/**
 * The contract every `SessionStore` passes, as vitest suites, for anyone writing a store of their own:
 *
 * ```ts
 * import { describeStoreContract } from "@sessions/gateway/store-contract";
 * describeStoreContract("my store", () => openMyStore()); // a fresh, empty store per call
 * ```
 *
 * Needs `vitest` (an optional peer dependency of `@sessions/gateway`); call it at the top level of a test file.
 */
export { binding, delivery, entry, run } from "./store/contract-records.js";
export { describeRunUnitsContract } from "./store/run-units.contract.js";
export { describeSearchContract } from "./store/search.contract.js";
export { describeStoreContract } from "./store/store.contract.js";
export { describeUnitOfWorkContract } from "./store/store-units.contract.js";
