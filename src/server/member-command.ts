// `stoa member list|add|remove|promote|transfer-leader`: cluster membership through the admin API of any node,
// with the server and client certificate of a kubeconfig context.

import {
  connectionFrom,
  defaultKubeconfig,
  errorMessage,
  httpsRequest,
  parseBody,
  parseCommandArgs,
  type CommandArgs,
} from './admin-client.js';

export const memberUsage = `usage: stoa member <command> [flags]

commands:
  list                              the members, their roles and peer URLs
  add NAME --peer-url URL           add a member as a learner; then start it with --initial-cluster-state=existing
  promote NAME                      make a caught-up learner a voter
  remove NAME                       remove a member (it stops serving)
  transfer-leader NAME              hand leadership to a member

flags:
  --kubeconfig FILE   credentials and server (default: $KUBECONFIG, ./data/cluster/admin.kubeconfig, ./data/admin.kubeconfig)
  --context NAME      kubeconfig context (default: its current context)
`;

interface MemberRow {
  id: string;
  name: string;
  peerUrl: string;
  role: string;
}

function table(rows: readonly MemberRow[]): string {
  const lines = [['ID', 'NAME', 'ROLE', 'PEER URL'], ...rows.map((r) => [r.id, r.name, r.role, r.peerUrl])];
  const widths = [0, 1, 2, 3].map((i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  return (
    lines
      .map((l) =>
        l
          .map((c, i) => c.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

export async function runMemberCommand(argv: readonly string[]): Promise<number> {
  let args: CommandArgs;
  try {
    args = parseCommandArgs(argv, ['kubeconfig', 'context', 'peer-url']);
  } catch (error) {
    process.stderr.write(`stoa member: ${(error as Error).message}\n\n${memberUsage}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(memberUsage);
    return 0;
  }
  const [command, name] = args.positional;
  const needsName =
    command === 'add' || command === 'remove' || command === 'promote' || command === 'transfer-leader';
  if (
    command === undefined ||
    (needsName && name === undefined) ||
    (command === 'add' && !args.values.has('peer-url'))
  ) {
    process.stderr.write(memberUsage);
    return 2;
  }
  const connection = await connectionFrom(
    args.values.get('kubeconfig') ?? defaultKubeconfig(),
    args.values.get('context'),
  );
  const call = (method: string, path: string, json?: unknown) =>
    httpsRequest(new URL(path, connection.server).toString(), connection, {
      method,
      ...(json !== undefined ? { json } : {}),
    });
  const memberPath = `/stoa/admin/v1/members/${encodeURIComponent(name ?? '')}`;
  let reply;
  switch (command) {
    case 'list':
      reply = await call('GET', '/stoa/admin/v1/members');
      break;
    case 'add':
      reply = await call('POST', '/stoa/admin/v1/members', { name, peerURL: args.values.get('peer-url') });
      break;
    case 'promote':
      reply = await call('POST', `${memberPath}/promote`);
      break;
    case 'remove':
      reply = await call('DELETE', memberPath);
      break;
    case 'transfer-leader':
      reply = await call('POST', '/stoa/admin/v1/leader', { name });
      break;
    default:
      process.stderr.write(`stoa member: unknown command "${command}"\n\n${memberUsage}`);
      return 2;
  }
  if (reply.status >= 300) {
    process.stderr.write(`stoa member ${command}: ${errorMessage(reply)}\n`);
    return 1;
  }
  const body = parseBody(reply.body) as { members?: MemberRow[]; leader?: string } & Partial<MemberRow>;
  if (body.members !== undefined) process.stdout.write(table(body.members));
  else if (command === 'add') {
    process.stdout.write(
      `added ${body.name ?? ''} (${body.id ?? ''}) as a learner; start it with --initial-cluster-state=existing, ` +
        `then run: stoa member promote ${body.name ?? ''}\n`,
    );
  } else if (body.leader !== undefined) process.stdout.write(`leader: ${body.leader}\n`);
  return 0;
}
