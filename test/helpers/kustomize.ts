/**
 * Renders a kustomization as `kubectl kustomize` does, for the subset deploy/ and the docs use:
 * `resources` (files and directories holding a kustomization.yaml, directories recursively), `images`
 * (`name` → `newName`, `newTag`) and inline strategic-merge `patches` whose lists are left alone (maps are
 * merged, as they are for metadata.annotations). Any other field is refused with its name, so a
 * kustomization that grows past this subset fails here instead of rendering wrong. test/examples.test.ts
 * compares the result with `kubectl kustomize` where kubectl is installed.
 *
 * Written here instead of adding kustomize (a Go binary) or a JavaScript port to the dependencies.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { parseAllDocuments, parse as parseYaml } from "yaml";

export type Json = Record<string, unknown>;

export interface RenderedObject {
  /** The file the object comes from, relative to `root` of renderKustomization. */
  readonly file: string;
  readonly object: Json;
}

const KNOWN_FIELDS = new Set(["apiVersion", "kind", "resources", "images", "patches"]);

interface ImageRule {
  readonly name: string;
  readonly newName?: string;
  readonly newTag?: string;
}

/** `kind namespace/name`, the identity kustomize refuses twice. */
export function objectId(object: Json): string {
  const meta = (object.metadata ?? {}) as { name?: string; namespace?: string };
  return `${String(object.kind)} ${meta.namespace ?? ""}/${meta.name ?? ""}`;
}

/**
 * The objects `dir`'s kustomization renders. `kustomization` replaces the file (a kustomization written in
 * the docs, rendered as if it were `dir`/kustomization.yaml). Files are named relative to `root`.
 */
export function renderKustomization(dir: string, root: string, kustomization?: Json): RenderedObject[] {
  const absolute = resolve(dir);
  const k = kustomization ?? readKustomization(absolute);
  const unknown = Object.keys(k).filter((key) => !KNOWN_FIELDS.has(key));
  if (unknown.length > 0)
    throw new Error(
      `${relative(root, absolute)}: kustomization field(s) ${unknown.join(", ")} not supported here`,
    );
  const out: RenderedObject[] = [];
  for (const resource of (k.resources ?? []) as string[]) {
    const path = resolve(absolute, resource);
    if (!existsSync(path))
      throw new Error(`${relative(root, absolute)}: resource ${resource} does not exist`);
    if (statSync(path).isDirectory()) out.push(...renderKustomization(path, root));
    else out.push(...readObjects(path, root));
  }
  for (const patch of (k.patches ?? []) as { patch?: string }[]) {
    if (typeof patch.patch !== "string" || Object.keys(patch).length !== 1)
      throw new Error(
        `${relative(root, absolute)}: only inline strategic-merge patches ({patch: ...}) are supported`,
      );
    applyPatch(out, parseYaml(patch.patch) as Json);
  }
  for (const rule of (k.images ?? []) as ImageRule[]) for (const o of out) setImages(o.object, rule);
  const seen = new Set<string>();
  for (const o of out) {
    const id = objectId(o.object);
    if (seen.has(id)) throw new Error(`${relative(root, absolute)}: ${id} is rendered twice`);
    seen.add(id);
  }
  return out;
}

function readKustomization(dir: string): Json {
  const file = join(dir, "kustomization.yaml");
  if (!existsSync(file)) throw new Error(`${dir} has no kustomization.yaml`);
  return parseYaml(readFileSync(file, "utf8")) as Json;
}

function readObjects(path: string, root: string): RenderedObject[] {
  return parseAllDocuments(readFileSync(path, "utf8")).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${relative(root, path)}: ${doc.errors[0]?.message}`);
    const object: unknown = doc.toJS();
    return object === null || object === undefined
      ? []
      : [{ file: relative(root, path), object: object as Json }];
  });
}

function applyPatch(objects: RenderedObject[], patch: Json): void {
  const target = objects.find((o) => objectId(o.object) === objectId(patch));
  if (target === undefined) throw new Error(`patch for ${objectId(patch)}: no such object`);
  mergeInto(target.object, patch, objectId(patch));
}

function mergeInto(target: Json, patch: Json, where: string): void {
  for (const [key, value] of Object.entries(patch)) {
    if (Array.isArray(value)) throw new Error(`patch for ${where}: lists (${key}) are not supported here`);
    const current = target[key];
    if (isMap(value) && isMap(current)) mergeInto(current, value, where);
    else target[key] = structuredClone(value);
  }
}

const isMap = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** kustomize's image transformer on pod templates: a container whose image's name is `rule.name`. */
function setImages(object: Json, rule: ImageRule): void {
  const pod = ((object.spec as Json | undefined)?.template as Json | undefined)?.spec as Json | undefined;
  if (pod === undefined) return;
  for (const list of [pod.containers, pod.initContainers]) {
    for (const container of (list ?? []) as { image?: string }[]) {
      const match = /^([^:@]+(?::\d+\/[^:@]+)?)(?::([^@]+))?(@.+)?$/.exec(container.image ?? "");
      if (match === null || match[1] !== rule.name) continue;
      const name = rule.newName ?? match[1];
      const tag = rule.newTag ?? match[2];
      container.image = `${name}${tag === undefined ? "" : `:${tag}`}${match[3] ?? ""}`;
    }
  }
}
