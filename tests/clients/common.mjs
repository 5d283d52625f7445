// What the client scripts share: the server to reach, from the command line, and the output.
//
//   node SCRIPT.mjs [--query Q] --url URL [--header 'Name: value' ...]   streamable HTTP
//   node SCRIPT.mjs [--query Q] -- COMMAND ARG...                       stdio (spawned)
//
// A script prints one JSON object on stdout (what the Python tests assert on); on failure, one
// line on stderr and exit code 1.

export function parseTarget(argv) {
  const target = { headers: {}, query: 'which agents can connect?' };
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index];
    if (argument === '--') {
      [target.command, ...target.args] = argv.slice(index + 1);
      break;
    } else if (argument === '--url') {
      target.url = new URL(argv[++index]);
    } else if (argument === '--header') {
      const [name, ...value] = argv[++index].split(':');
      target.headers[name.trim()] = value.join(':').trim();
    } else if (argument === '--query') {
      target.query = argv[++index];
    } else {
      throw new Error(`unknown argument ${argument}`);
    }
  }
  if (!target.url === !target.command) {
    throw new Error('give --url URL or -- COMMAND ARG... (one of them)');
  }
  return target;
}

// A fetch that records each MCP request's method and the session id sent and answered.
export function recordingFetch(exchanges) {
  return async (url, init = {}) => {
    const headers = new Headers(init.headers);
    const body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
    const response = await fetch(url, init);
    exchanges.push({
      method: body?.method ?? null,
      sent_session: headers.get('mcp-session-id'),
      answered_session: response.headers.get('mcp-session-id'),
      status: response.status,
    });
    return response;
  };
}

// The facts of a tools/list result the tests check, tools in the order listed.
export function toolsOf(listed) {
  return listed.tools.map((tool) => ({
    name: tool.name,
    title: tool.title ?? null,
    read_only: tool.annotations?.readOnlyHint ?? null,
    output_schema: Boolean(tool.outputSchema),
  }));
}

// The facts of a tools/call result the tests check.
export function callOf(result) {
  return {
    is_error: Boolean(result.isError),
    text: result.content.filter((block) => block.type === 'text').map((block) => block.text),
    structured: result.structuredContent ?? null,
  };
}

export function cacheHints(result) {
  return { ttlMs: result.ttlMs ?? null, cacheScope: result.cacheScope ?? null };
}

export async function main(run) {
  try {
    const output = await run(parseTarget(process.argv.slice(2)));
    process.stdout.write(`${JSON.stringify(output)}\n`);
    process.exit(0);
  } catch (error) {
    process.stderr.write(`${error?.message ?? error}`.split('\n')[0] + '\n');
    process.exit(1);
  }
}
