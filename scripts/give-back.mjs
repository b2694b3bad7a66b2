// Run as root (sudo npm install, sudo npm test) in a checkout that another user owns, gives the paths named
// on the command line back to the checkout's owner, so that the owner's own `npm install && npm test` still
// works afterwards. Does nothing for anyone else, or in a checkout root owns. Used by package.json's
// postinstall (node_modules/, the lockfile) and by the tests' global setup (dist/, vite's caches).
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { pathToFileURL } from "node:url";

/** Gives `paths` (those that exist) back to the owner of `checkout`, when we are root and they are not. */
export function giveBack(paths, checkout = ".") {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = statSync(checkout);
  if (uid === 0) return;
  const present = paths.filter((p) => existsSync(p));
  if (present.length > 0) execFileSync("chown", ["-R", `${uid}:${gid}`, ...present]);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) giveBack(process.argv.slice(2));
