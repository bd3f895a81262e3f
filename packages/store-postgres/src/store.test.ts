import { describeStoreContract } from "@sessions/gateway/store-contract";
import { inject } from "vitest";
import { createPostgresStore } from "./store.js";

const url = inject("postgresUrl");
let n = 0;

// Every case gets a fresh schema: an empty store, migrated from nothing.
describeStoreContract("postgres", () =>
  createPostgresStore({ connectionString: url, schema: `contract_${process.pid}_${++n}` }),
);
