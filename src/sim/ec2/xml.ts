/** Hand-written XML for the EC2 Query protocol: elements with camelCase names, lists as `<xSet><item>`. */

const entities: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
};

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => entities[c] ?? c);
}

/** `<name>escaped value</name>`, or nothing when the value is undefined or null. */
export function leaf(name: string, value: string | number | boolean | null | undefined): string {
  if (value === undefined || value === null) return "";
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}

/** `<name>children</name>`; `children` is XML already built by these helpers. */
export function node(name: string, children: string): string {
  return `<${name}>${children}</${name}>`;
}

/** `<name><item>..</item>...</name>`; an empty list gives `<name/>`, which the SDKs read as []. */
export function itemSet(name: string, items: readonly string[]): string {
  return items.length === 0 ? `<${name}/>` : node(name, items.map((item) => node("item", item)).join(""));
}

/** `tagSet` of `{key, value}` items. */
export function tagSet(tags: Readonly<Record<string, string>>): string {
  return itemSet(
    "tagSet",
    Object.entries(tags).map(([key, value]) => leaf("key", key) + leaf("value", value)),
  );
}
