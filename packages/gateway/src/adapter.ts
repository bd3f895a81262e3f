export type {
  ChannelAdapterV1,
  ChannelCapabilities,
  DeliveryKind,
  DeliveryReceipt,
  DeliveryTarget,
  InboundGateway,
  InboundMessage,
  OutboundMessage,
  ReceiveResult,
} from "@sessions/core";
