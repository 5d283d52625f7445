// The 2025-11-25 era, as the official TypeScript SDK's client (@modelcontextprotocol/sdk 1.x)
// speaks it: initialize, tools/list, tools/call search, then fetch of the first hit.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { callOf, main, recordingFetch, toolsOf } from './common.mjs';

await main(async (target) => {
  const exchanges = [];
  const transport = target.url
    ? new StreamableHTTPClientTransport(target.url, {
        requestInit: { headers: target.headers },
        fetch: recordingFetch(exchanges),
      })
    : new StdioClientTransport({ command: target.command, args: target.args, env: process.env, stderr: 'pipe' });
  let protocolVersion = null;
  const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (version) => {
    protocolVersion = version;
    setProtocolVersion?.(version);
  };
  const client = new Client({ name: 'duckdb-vectors-tests', version: '1.0.0' });
  const timeout = { timeout: 120_000 };
  await client.connect(transport, timeout);
  try {
    const listed = await client.listTools(undefined, timeout);
    const search = await client.callTool(
      { name: 'search', arguments: { query: target.query } },
      undefined,
      timeout,
    );
    const first = search.structuredContent?.results?.[0];
    const fetched = await client.callTool(
      { name: 'fetch', arguments: { id: first?.chunk_id ?? '' } },
      undefined,
      timeout,
    );
    return {
      client: '@modelcontextprotocol/sdk',
      protocol_version: protocolVersion,
      server_info: client.getServerVersion(),
      tools: toolsOf(listed),
      search: callOf(search),
      fetch: callOf(fetched),
      exchanges,
    };
  } finally {
    await client.close();
  }
});
