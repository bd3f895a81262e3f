export { type InitTelegramBotOptions, initTelegramBot } from "./init.js";
export {
  createTelegramAdapter,
  GENERAL_TOPIC_ID,
  TELEGRAM_MAX_MESSAGE_LENGTH,
  type TelegramAdapter,
  type TelegramAdapterConfig,
  type TelegramInbound,
  telegramChatId,
} from "./telegram.js";
