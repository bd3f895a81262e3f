// Vitest-based contract suites, on their own entry so the fakes can be used without a test runner loaded.
export { type AdapterContractHarness, describeChannelAdapterContract } from "./adapter-contract.js";
