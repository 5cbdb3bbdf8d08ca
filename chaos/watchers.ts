// Long-lived watchers for a chaos run. Each lists once, then watches ConfigMaps from the list's resourceVersion
// on a random node; when the stream ends (server timeout, a killed node, a dropped link) it reconnects to a
// random node and resumes from the last revision it saw (event or bookmark). A 410 Gone makes it relist and
// log a RESYNC. Every record goes into a WatcherLog for the watch checker.

import { Agent, request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { Random } from '../src/util/clock.js';
import { seededRandom } from '../src/util/clock.js';
import type { WatcherLog, WatcherRecord } from './checker/watch.js';
import type { Tls } from './cluster.js';
import { configMapsPath, keyPrefix } from './workload.js';

export interface WatchersOptions {
  readonly watchers: number;
  readonly nodes: number;
  readonly seed: number;
  readonly tls: Tls;
  readonly apiUrl: (node: number) => string;
  /** Reconnections per watcher before it gives up (a bound, not an expected count). */
  readonly reconnectsMax: number;
}

interface WatchLine {
  type?: string;
  object?: {
    code?: number;
    metadata?: { name?: string; resourceVersion?: string };
    data?: { value?: string };
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

class Watcher {
  readonly records: WatcherRecord[] = [];
  startRevision = -1;
  /** The last revision seen (event, bookmark or relist). */
  lastRevision = 0;
  reconnects = 0;
  resyncs = 0;
  private stopped = false;
  private current: { destroy(): void } | undefined;
  private readonly agent: Agent;

  constructor(
    readonly id: string,
    private readonly options: WatchersOptions,
    private readonly random: Random,
  ) {
    this.agent = new Agent({
      keepAlive: false,
      ca: options.tls.ca,
      cert: options.tls.cert,
      key: options.tls.key,
    });
  }

  log(): WatcherLog {
    return { id: this.id, prefix: keyPrefix, startRevision: this.startRevision, records: this.records };
  }

  stop(): void {
    this.stopped = true;
    this.current?.destroy();
    this.agent.destroy();
  }

  private requestOptions(timeoutMs: number): RequestOptions {
    const tls = this.options.tls;
    return { agent: this.agent, ca: tls.ca, cert: tls.cert, key: tls.key, timeout: timeoutMs };
  }

  /** A quorum list; the revision it was served at, or undefined. */
  private async relist(): Promise<number | undefined> {
    const node = this.random.int(0, this.options.nodes);
    const body = await new Promise<string | undefined>((resolve) => {
      const req = request(
        `${this.options.apiUrl(node)}${configMapsPath}`,
        this.requestOptions(3_000),
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve(res.statusCode === 200 ? text : undefined));
          res.on('error', () => resolve(undefined));
        },
      );
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(undefined));
      req.end();
    });
    if (body === undefined) return undefined;
    try {
      const revision = Number(
        (JSON.parse(body) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion,
      );
      return Number.isInteger(revision) ? revision : undefined;
    } catch {
      return undefined;
    }
  }

  async run(): Promise<void> {
    while (!this.stopped && this.startRevision < 0) {
      const revision = await this.relist();
      if (revision !== undefined) {
        this.startRevision = revision;
        this.lastRevision = revision;
      } else await sleep(200);
    }
    while (!this.stopped && this.reconnects < this.options.reconnectsMax) {
      const gone = await this.watchOnce();
      if (this.stopped) break;
      this.reconnects++;
      if (gone) {
        const revision = await this.relist();
        if (revision === undefined) {
          await sleep(200);
          continue;
        }
        this.resyncs++;
        this.records.push({ type: 'RESYNC', revision });
        this.lastRevision = revision;
      } else {
        // Now and then a slow watcher: away long enough for its revision to leave the watch window (410).
        const away =
          this.random.next() < 0.2 ? 3_000 + this.random.int(0, 5_000) : 50 + this.random.int(0, 200);
        const until = Date.now() + away;
        while (!this.stopped && Date.now() < until) await sleep(100);
      }
    }
  }

  /** One watch stream until it ends; true if it ended with 410 Gone. */
  private watchOnce(): Promise<boolean> {
    const node = this.random.int(0, this.options.nodes);
    const timeoutSeconds = 5 + this.random.int(0, 10);
    const url =
      `${this.options.apiUrl(node)}${configMapsPath}?watch=1&allowWatchBookmarks=true` +
      `&resourceVersion=${this.lastRevision}&timeoutSeconds=${timeoutSeconds}`;
    return new Promise((resolve) => {
      let gone = false;
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        this.current = undefined;
        resolve(gone);
      };
      // Socket idle timeout: a paused node or a silent link ends the stream (bookmarks keep a live one busy).
      const req = request(url, this.requestOptions(timeoutSeconds * 1000 + 5_000), (res: IncomingMessage) => {
        if (res.statusCode === 410) {
          gone = true;
          res.resume();
          res.on('end', finish);
          res.on('error', finish);
          return;
        }
        if (res.statusCode !== 200) {
          res.resume();
          res.on('end', finish);
          res.on('error', finish);
          return;
        }
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let newline = buffer.indexOf('\n');
          while (newline >= 0) {
            const line = buffer.slice(0, newline).trim();
            buffer = buffer.slice(newline + 1);
            if (line !== '' && this.onLine(line)) {
              gone = true;
              req.destroy();
            }
            newline = buffer.indexOf('\n');
          }
        });
        res.on('end', finish);
        res.on('error', finish);
        res.on('close', finish);
      });
      this.current = req;
      req.on('timeout', () => req.destroy());
      req.on('error', finish);
      req.on('close', finish);
      req.end();
    });
  }

  /** Records one event line; true if it is a 410 Gone error. */
  private onLine(line: string): boolean {
    let event: WatchLine;
    try {
      event = JSON.parse(line) as WatchLine;
    } catch {
      return false;
    }
    const revision = Number(event.object?.metadata?.resourceVersion);
    switch (event.type) {
      case 'ERROR':
        return event.object?.code === 410;
      case 'BOOKMARK':
        if (Number.isInteger(revision)) {
          this.records.push({ type: 'BOOKMARK', revision });
          this.lastRevision = Math.max(this.lastRevision, revision);
        }
        return false;
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        const key = event.object?.metadata?.name;
        if (key === undefined || !Number.isInteger(revision)) return false;
        this.lastRevision = Math.max(this.lastRevision, revision);
        if (!key.startsWith(keyPrefix)) return false; // objects the workload does not own
        const value = event.type === 'DELETED' ? undefined : event.object?.data?.value;
        this.records.push({
          type: event.type,
          key,
          revision,
          ...(value === undefined ? {} : { value }),
        });
        this.lastRevision = Math.max(this.lastRevision, revision);
        return false;
      }
      default:
        return false;
    }
  }
}

export class Watchers {
  private readonly watchers: Watcher[];
  private running: Promise<void> | undefined;

  constructor(options: WatchersOptions) {
    const seeds = seededRandom(options.seed);
    this.watchers = Array.from(
      { length: options.watchers },
      (_, i) => new Watcher(`w${i}`, options, seededRandom(seeds.int(0, 2 ** 31))),
    );
  }

  start(): void {
    this.running = Promise.all(this.watchers.map((w) => w.run())).then(() => undefined);
  }

  /** The lowest revision every watcher has reached. */
  minRevision(): number {
    return Math.min(...this.watchers.map((w) => w.lastRevision));
  }

  async stop(): Promise<void> {
    for (const watcher of this.watchers) watcher.stop();
    await this.running;
  }

  logs(): WatcherLog[] {
    return this.watchers.filter((w) => w.startRevision >= 0).map((w) => w.log());
  }

  stats(): { id: string; records: number; reconnects: number; resyncs: number; lastRevision: number }[] {
    return this.watchers.map((w) => ({
      id: w.id,
      records: w.records.length,
      reconnects: w.reconnects,
      resyncs: w.resyncs,
      lastRevision: w.lastRevision,
    }));
  }
}
