export { MIGRATIONS, SCHEMA_VERSION } from "./migrations.js";
export { createPostgresStore, type PostgresStoreOptions } from "./store.js";
