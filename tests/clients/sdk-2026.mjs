// The 2026-07-28 era, as the official TypeScript SDK's v2 client (@modelcontextprotocol/client)
// speaks it, pinned to that revision: server/discover (no initialize), tools/list, tools/call
// search and fetch; then stateless calls: a new client that adopts the discover result it was
// given (as a host that cached it would) calls a tool with no handshake at all.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { cacheHints, callOf, main, recordingFetch, toolsOf } from './common.mjs';

const ERA = '2026-07-28';
const options = { versionNegotiation: { mode: { pin: ERA } } };
const timeout = { timeout: 120_000 };

function transportFor(target, exchanges) {
  return target.url
    ? new StreamableHTTPClientTransport(target.url, {
        requestInit: { headers: target.headers },
        fetch: recordingFetch(exchanges),
      })
    : new StdioClientTransport({ command: target.command, args: target.args, env: process.env, stderr: 'pipe' });
}

await main(async (target) => {
  const exchanges = [];
  const client = new Client({ name: 'duckdb-vectors-tests', version: '1.0.0' }, options);
  await client.connect(transportFor(target, exchanges), timeout);
  let era, discovered, listed, search, fetched;
  try {
    era = {
      protocol_version: client.getNegotiatedProtocolVersion(),
      era: client.getProtocolEra(),
      server_info: client.getServerVersion(),
    };
    discovered = client.getDiscoverResult();
    listed = await client.listTools(undefined, timeout);
    search = await client.callTool({ name: 'search', arguments: { query: target.query } }, timeout);
    const first = search.structuredContent?.results?.[0];
    fetched = await client.callTool({ name: 'fetch', arguments: { id: first?.chunk_id ?? '' } }, timeout);
  } finally {
    await client.close();
  }

  // Stateless: a fresh client and connection, given the discover result, sends tools/call first.
  const statelessExchanges = [];
  const stateless = new Client({ name: 'duckdb-vectors-tests', version: '1.0.0' }, options);
  await stateless.connect(transportFor(target, statelessExchanges), {
    ...timeout,
    prior: { kind: 'modern', discover: discovered },
  });
  let statelessSearch;
  try {
    statelessSearch = await stateless.callTool(
      { name: 'search', arguments: { query: target.query, top_k: 1 } },
      timeout,
    );
  } finally {
    await stateless.close();
  }
  return {
    client: '@modelcontextprotocol/client',
    ...era,
    discover: {
      supported_versions: discovered.supportedVersions,
      capabilities: discovered.capabilities,
      ...cacheHints(discovered),
    },
    tools_list: cacheHints(listed),
    tools: toolsOf(listed),
    search: callOf(search),
    fetch: callOf(fetched),
    exchanges,
    stateless: { search: callOf(statelessSearch), exchanges: statelessExchanges },
  };
});
