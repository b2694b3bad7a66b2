/** A world file (or object) is unreadable or invalid. The message names the file, the field and the fix. */
export class WorldError extends Error {
  override name = "WorldError";
  /** The file path, or undefined when an object was parsed directly. */
  readonly file: string | undefined;
  /** One line per problem, each starting with the field path, e.g. `instances[0].enis[1].mac: ...`. */
  readonly problems: readonly string[];

  constructor(file: string | undefined, problems: readonly string[], options?: { cause?: unknown }) {
    const where = file === undefined ? "world" : `world file ${file}`;
    super(
      `${where} is invalid: ${problems.join("; ")}`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.file = file;
    this.problems = problems;
  }
}
