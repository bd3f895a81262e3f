export type { MatrixClientLike, MatrixEventLike, MatrixMemberLike, MatrixRoomLike } from "./client.js";
export { toSessionsError as matrixErrorToSessionsError } from "./errors.js";
export { type MatrixRelation, matrixRoomId, messageText, relationOf, stripReplyFallback } from "./events.js";
export {
  createMatrixAdapter,
  MATRIX_MAX_MESSAGE_LENGTH,
  type MatrixAdapter,
  type MatrixAdapterConfig,
  type MatrixInbound,
} from "./matrix.js";
