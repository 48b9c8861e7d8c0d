// The seqsvr browser client: connect-web transports for the three wire
// formats every seqsvr process serves (Connect JSON, Connect binary,
// gRPC-web) and typed clients for its services. Side-effect-free RPCs
// (idempotency_level = NO_SIDE_EFFECTS in proto/) go out as Connect GET
// requests, which need no CORS preflight when no token is sent.
import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { AllocService } from "./gen/seqsvr/v1/alloc_pb";
import { SeqService } from "./gen/seqsvr/v1/seq_pb";
import { StoreService } from "./gen/seqsvr/v1/store_pb";

export { Code, ConnectError } from "@connectrpc/connect";
export { AllocService, SeqService, StoreService };

export type Protocol = "connect-json" | "connect-binary" | "grpc-web";
export const protocols: readonly Protocol[] = ["connect-json", "connect-binary", "grpc-web"];

export interface Options {
  protocol?: Protocol;
  // A bearer token, or a function returning the current one ("" for none).
  token?: string | (() => string);
  // The default deadline of each call (5000). It travels as the
  // Connect-Timeout-Ms header, which makes every call preflighted; 0 sends
  // none, so a token-less Connect GET is a CORS simple request.
  timeoutMs?: number;
}

// bearer adds Authorization: Bearer TOKEN when there is a token.
function bearer(token: Options["token"]): Interceptor {
  return (next) => async (req) => {
    const t = typeof token === "function" ? token() : token;
    if (t) req.header.set("Authorization", "Bearer " + t);
    return next(req);
  };
}

// transport speaks protocol to the seqsvr process at baseUrl
// ("https://host:port").
export function transport(baseUrl: string, o: Options = {}): Transport {
  const interceptors = [bearer(o.token)];
  const defaultTimeoutMs = o.timeoutMs === 0 ? undefined : (o.timeoutMs ?? 5000);
  switch (o.protocol ?? "connect-json") {
    case "connect-json":
      return createConnectTransport({ baseUrl, useHttpGet: true, interceptors, defaultTimeoutMs });
    case "connect-binary":
      return createConnectTransport({ baseUrl, useBinaryFormat: true, useHttpGet: true, interceptors, defaultTimeoutMs });
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, useBinaryFormat: true, interceptors, defaultTimeoutMs });
  }
}

export type AllocClient = Client<typeof AllocService>;
export type StoreClient = Client<typeof StoreService>;
export type SeqClient = Client<typeof SeqService>;

export const allocClient = (baseUrl: string, o?: Options): AllocClient => createClient(AllocService, transport(baseUrl, o));
export const storeClient = (baseUrl: string, o?: Options): StoreClient => createClient(StoreService, transport(baseUrl, o));
export const seqClient = (baseUrl: string, o?: Options): SeqClient => createClient(SeqService, transport(baseUrl, o));
