export {
  createFakeTelegramApi,
  type FakeTelegramApi,
  type FakeTelegramError,
  type TelegramCall,
} from "./fake-telegram.js";
export { type TelegramFixtureName, telegramUpdate } from "./telegram-fixtures.js";
