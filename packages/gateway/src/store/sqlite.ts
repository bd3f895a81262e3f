export { createSqliteStore, type SqliteStoreOptions } from "./sqlite/store.js";
