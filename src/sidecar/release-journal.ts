import { accessSync, constants, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { ConfigError } from "../eni/errors/config-error.js";
import { canonical, tryCanonical } from "../eni/ip.js";
import type { Logger } from "../eni/process/logger.js";

const VARIABLE = "IPMGR_STATE_FILE";
const VERSION = 1;

/** What the file holds. */
interface JournalFile {
  readonly version: number;
  /** Addresses that left the pod's interfaces and that the sidecar has not released (or let go) yet. */
  readonly pendingReleases: readonly string[];
}

/**
 * The sidecar's pending releases on a volume that survives a container restart (IPMGR_STATE_FILE, an
 * emptyDir). An address removed from the pod's interface is released only after the settle time (250 ms):
 * a sidecar killed in that window (OOM, SIGKILL, node pressure) used to come back with no memory of it, and
 * the address stayed on our ENI for good. The file is rewritten (a new file renamed over the old: never
 * half written) whenever the set changes, and read once at start; what it lists is released then, through
 * the same rules as any release: only once it has stayed off the pod's interfaces for the settle time, only
 * from the ENIs behind this pod's interfaces, and only while such an ENI holds it. An address the pod
 * carries again is never released, whatever the file says.
 */
export class ReleaseJournal {
  readonly path: string;
  readonly #logger: Logger;
  /** The content last written, to skip writes that change nothing. */
  #written: string | undefined;
  #failing = false;

  private constructor(path: string, logger: Logger) {
    this.path = path;
    this.#logger = logger;
  }

  /**
   * Opens the journal at `path` and returns it with what a previous run of this container left pending.
   * @throws ConfigError (exit 2) when the directory does not exist or may not be written: the volume is missing.
   */
  static open(path: string, logger: Logger): { journal: ReleaseJournal; pending: string[] } {
    const directory = dirname(path);
    try {
      if (!statSync(directory).isDirectory()) throw new Error(`${directory} is not a directory`);
      accessSync(directory, constants.W_OK);
    } catch (cause) {
      throw new ConfigError(
        VARIABLE,
        path,
        `the directory ${directory} does not exist or may not be written (${(cause as NodeJS.ErrnoException).code ?? String(cause)}); ` +
          `mount a volume that survives a container restart there (an emptyDir, as deploy/overlays/sidecar/statefulset-sidecar.yaml does), or unset ${VARIABLE}`,
        { cause },
      );
    }
    const journal = new ReleaseJournal(path, logger);
    return { journal, pending: journal.#read() };
  }

  /** Records the releases pending now (the watcher's released addresses). Failures are logged, once. */
  save(addresses: Iterable<string>): void {
    const pendingReleases = [...new Set([...addresses].map(canonical))].sort();
    const text = `${JSON.stringify({ version: VERSION, pendingReleases } satisfies JournalFile)}\n`;
    if (text === this.#written) return;
    const temporary = `${this.path}.tmp`;
    try {
      writeFileSync(temporary, text);
      renameSync(temporary, this.path);
    } catch (error) {
      if (!this.#failing) {
        this.#failing = true;
        this.#logger.warn(
          { err: error, file: this.path },
          "cannot write the pending releases to IPMGR_STATE_FILE; a restart inside the settle window may leave an address on our ENI (logged once)",
        );
      }
      return;
    }
    this.#written = text;
    if (this.#failing) {
      this.#failing = false;
      this.#logger.info({ file: this.path }, "writing the pending releases works again");
    }
  }

  /** What the file lists; nothing when there is no file (a first start), or when it cannot be used. */
  #read(): string[] {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      this.#logger.warn({ err: error, file: this.path }, "cannot read IPMGR_STATE_FILE; starting without it");
      return [];
    }
    const listed = parseJournal(text);
    if (listed === undefined) {
      this.#logger.warn(
        { file: this.path },
        `IPMGR_STATE_FILE is not a pending-release file of version ${VERSION}; starting without it (it is rewritten)`,
      );
      return [];
    }
    this.#written = text;
    return listed;
  }
}

/** The addresses of a journal file's text; undefined when it is not one. Entries that are no address are dropped. */
export function parseJournal(text: string): string[] | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof raw !== "object" || raw === null) return undefined;
  const { version, pendingReleases } = raw as Partial<Record<keyof JournalFile, unknown>>;
  if (version !== VERSION || !Array.isArray(pendingReleases)) return undefined;
  const addresses = pendingReleases.map((a) => (typeof a === "string" ? tryCanonical(a) : undefined));
  return addresses.filter((a): a is string => a !== undefined);
}
