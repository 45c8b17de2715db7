// What the SDK takes from "@langchain/core/messages", from the modules that define it: the
// package's index also loads its message transformers, whose runnables bring LangSmith's
// tracing client (a third of the bundle) that the console never runs. build.mjs points the
// SDK's imports here.
export { AIMessage, AIMessageChunk } from "@langchain/core/dist/messages/ai.js";
export { BaseMessageChunk } from "@langchain/core/dist/messages/base.js";
export { HumanMessage, HumanMessageChunk } from "@langchain/core/dist/messages/human.js";
export { RemoveMessage } from "@langchain/core/dist/messages/modifier.js";
export { SystemMessage, SystemMessageChunk } from "@langchain/core/dist/messages/system.js";
export { ToolMessage, ToolMessageChunk } from "@langchain/core/dist/messages/tool.js";
export { coerceMessageLikeToMessage, convertToChunk } from "@langchain/core/dist/messages/utils.js";
