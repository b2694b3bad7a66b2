/**
 * Which EC2 operations each command can send, read from the source (syntax only, no type checker).
 *
 * 1. The EC2 adapters: every module under src/ (the simulator aside) that imports a `XCommand` class from
 *    @aws-sdk/client-ec2. In each class that `implements` an interface, a method sends the commands it
 *    constructs (`new XCommand(...)`) and those of the methods and module functions it calls, transitively.
 *    A command constructed with `TagSpecifications` also needs `ec2:CreateTags`: EC2 authorizes tags given
 *    at creation as that action (Service Authorization Reference, "dependent actions"). A command
 *    constructed with `DryRun: true` is a permission probe (doctor's): EC2 answers the verdict and does
 *    nothing, so it is recorded apart (`methodProbedOperations`) and needs no grant of its own.
 * 2. A command's modules: the string-literal `import("...")` calls in its entry of the `commands` table of
 *    src/cli/dispatch.ts, then every module they import (static and dynamic imports, re-exports), transitively.
 * 3. The interface methods a command can reach: any use of a method's name in those modules, outside the
 *    classes that implement the interface (a wrapper forwarding every method reaches nothing by itself).
 *
 * Over-approximating on purpose: a name used for something else counts as a call. What it cannot see is a
 * method named by a computed string; the tests check that every imported command is sent by some method.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const SDK_MODULE = "@aws-sdk/client-ec2";
const COMMAND_SUFFIX = "Command";
/** The EC2 action EC2 checks, besides the create action, for tags given at creation. */
export const TAG_ON_CREATE_ACTION = "CreateTags";

/** One EC2 adapter module. Operation names are EC2 action names (`AssignPrivateIpAddresses`). */
export interface AdapterModel {
  /** Path relative to the repository root. */
  readonly file: string;
  /** Names of the interfaces its classes implement (`Ec2Api`). */
  readonly interfaces: readonly string[];
  /** The operations each public method can send, its own and its helpers'. */
  readonly methodOperations: ReadonlyMap<string, ReadonlySet<string>>;
  /** Operations each public method can send with `TagSpecifications`. */
  readonly methodTaggedOperations: ReadonlyMap<string, ReadonlySet<string>>;
  /** Operations each public method sends with `DryRun: true` (probes: not in methodOperations). */
  readonly methodProbedOperations: ReadonlyMap<string, ReadonlySet<string>>;
  /** The `XCommand` classes it imports, as operation names. */
  readonly importedOperations: ReadonlySet<string>;
  /** Operations constructed somewhere no interface method reaches (must be empty). */
  readonly unreachedOperations: ReadonlySet<string>;
}

interface FunctionFacts {
  readonly operations: Set<string>;
  readonly tagged: Set<string>;
  readonly probed: Set<string>;
  /** Names of class methods (`this.x(...)`) and module functions (`x(...)`) it calls. */
  readonly calls: Set<string>;
}

function parse(fileName: string, text: string): ts.SourceFile {
  return ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
}

function nameText(name: ts.PropertyName | ts.PrivateIdentifier | undefined): string | undefined {
  if (name === undefined) return undefined;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name)) return name.text;
  return undefined;
}

/** Value (not type-only) names a module imports from `module`. */
function valueImportsFrom(source: ts.SourceFile, module: string): string[] {
  const names: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement)) continue;
    if (!ts.isStringLiteral(statement.moduleSpecifier) || statement.moduleSpecifier.text !== module) continue;
    const clause = statement.importClause;
    if (clause === undefined || clause.isTypeOnly) continue;
    const bindings = clause.namedBindings;
    if (bindings === undefined || !ts.isNamedImports(bindings)) continue;
    for (const element of bindings.elements) {
      if (!element.isTypeOnly) names.push(element.name.text);
    }
  }
  return names;
}

function implementedInterfaces(node: ts.ClassDeclaration): string[] {
  const names: string[] = [];
  for (const clause of node.heritageClauses ?? []) {
    if (clause.token !== ts.SyntaxKind.ImplementsKeyword) continue;
    for (const type of clause.types) {
      if (ts.isIdentifier(type.expression)) names.push(type.expression.text);
    }
  }
  return names;
}

/** Whether the object literal (or a literal spread into it, conditionally or not) sets `property`. */
function setsProperty(node: ts.Node | undefined, property: string): boolean {
  if (node === undefined) return false;
  if (ts.isObjectLiteralElementLike(node) && nameText(node.name) === property) return true;
  return ts.forEachChild(node, (child) => setsProperty(child, property) || undefined) ?? false;
}

/** Whether the command's input is an object literal that sets `DryRun: true` itself. */
function isDryRun(node: ts.Node | undefined): boolean {
  if (node === undefined || !ts.isObjectLiteralExpression(node)) return false;
  return node.properties.some(
    (p) =>
      ts.isPropertyAssignment(p) &&
      nameText(p.name) === "DryRun" &&
      p.initializer.kind === ts.SyntaxKind.TrueKeyword,
  );
}

const noFacts = (): FunctionFacts => ({
  operations: new Set(),
  tagged: new Set(),
  probed: new Set(),
  calls: new Set(),
});

/** What one function body sends and calls; `commands` maps an imported class name to its operation. */
function factsOf(body: ts.Node, commands: ReadonlyMap<string, string>): FunctionFacts {
  const facts = noFacts();
  const visit = (node: ts.Node): void => {
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression)) {
      const operation = commands.get(node.expression.text);
      const input = node.arguments?.[0];
      if (operation !== undefined && isDryRun(input)) facts.probed.add(operation);
      else if (operation !== undefined) {
        facts.operations.add(operation);
        if (setsProperty(input, "TagSpecifications")) facts.tagged.add(operation);
      }
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (ts.isPropertyAccessExpression(callee) && callee.expression.kind === ts.SyntaxKind.ThisKeyword) {
        facts.calls.add(callee.name.text);
      } else if (ts.isIdentifier(callee)) {
        facts.calls.add(callee.text);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(body);
  return facts;
}

function closure(start: string, graph: ReadonlyMap<string, FunctionFacts>): FunctionFacts {
  const out = noFacts();
  const seen = new Set<string>();
  const stack = [start];
  for (let name = stack.pop(); name !== undefined; name = stack.pop()) {
    if (seen.has(name)) continue;
    seen.add(name);
    const facts = graph.get(name);
    if (facts === undefined) continue;
    for (const op of facts.operations) out.operations.add(op);
    for (const op of facts.tagged) out.tagged.add(op);
    for (const op of facts.probed) out.probed.add(op);
    for (const callee of facts.calls) {
      out.calls.add(callee);
      stack.push(callee);
    }
  }
  return out;
}

/** Models one adapter module from its text. */
export function analyzeAdapter(file: string, text: string): AdapterModel {
  const source = parse(file, text);
  const commands = new Map<string, string>();
  for (const name of valueImportsFrom(source, SDK_MODULE)) {
    if (name.endsWith(COMMAND_SUFFIX) && name.length > COMMAND_SUFFIX.length) {
      commands.set(name, name.slice(0, -COMMAND_SUFFIX.length));
    }
  }
  const moduleFunctions = new Map<string, FunctionFacts>();
  const interfaces: string[] = [];
  const methodOperations = new Map<string, Set<string>>();
  const methodTaggedOperations = new Map<string, Set<string>>();
  const methodProbedOperations = new Map<string, Set<string>>();
  const reached = new Set<string>();
  const classes: { methods: Map<string, FunctionFacts>; publicMethods: string[] }[] = [];

  for (const statement of source.statements) {
    if (ts.isFunctionDeclaration(statement) && statement.name !== undefined && statement.body !== undefined) {
      moduleFunctions.set(statement.name.text, factsOf(statement.body, commands));
    }
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        if (ts.isIdentifier(declaration.name) && declaration.initializer !== undefined) {
          moduleFunctions.set(declaration.name.text, factsOf(declaration.initializer, commands));
        }
      }
    }
    if (ts.isClassDeclaration(statement)) {
      const implemented = implementedInterfaces(statement);
      if (implemented.length === 0) continue;
      interfaces.push(...implemented);
      const methods = new Map<string, FunctionFacts>();
      const publicMethods: string[] = [];
      for (const member of statement.members) {
        if (!ts.isMethodDeclaration(member) || member.body === undefined) continue;
        const name = nameText(member.name);
        if (name === undefined) continue;
        methods.set(name, factsOf(member.body, commands));
        const hidden =
          ts.isPrivateIdentifier(member.name) ||
          (ts.getCombinedModifierFlags(member) & ts.ModifierFlags.Private) !== 0;
        if (!hidden) publicMethods.push(name);
      }
      classes.push({ methods, publicMethods });
    }
  }

  for (const { methods, publicMethods } of classes) {
    const graph = new Map<string, FunctionFacts>([...moduleFunctions, ...methods]);
    for (const method of publicMethods) {
      const facts = closure(method, graph);
      methodOperations.set(method, facts.operations);
      methodTaggedOperations.set(method, facts.tagged);
      methodProbedOperations.set(method, facts.probed);
      for (const op of [...facts.operations, ...facts.probed]) reached.add(op);
    }
  }
  const importedOperations = new Set(commands.values());
  return {
    file,
    interfaces,
    methodOperations,
    methodTaggedOperations,
    methodProbedOperations,
    importedOperations,
    unreachedOperations: new Set([...importedOperations].filter((op) => !reached.has(op))),
  };
}

/** Method names declared by `interface <name>` in a module's text. */
export function interfaceMethodNames(text: string, name: string): string[] {
  const source = parse("interface.ts", text);
  const out: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isInterfaceDeclaration(statement) || statement.name.text !== name) continue;
    for (const member of statement.members) {
      const memberName = nameText(member.name);
      if (memberName !== undefined && (ts.isMethodSignature(member) || ts.isPropertySignature(member))) {
        out.push(memberName);
      }
    }
  }
  return out;
}

/**
 * The IAM actions each method of `interface <name>` documents in its doc comment (`IAM: ec2:X`), as the
 * style guide asks.
 */
export function documentedActions(text: string, name: string): Map<string, Set<string>> {
  const source = parse("interface.ts", text);
  const out = new Map<string, Set<string>>();
  for (const statement of source.statements) {
    if (!ts.isInterfaceDeclaration(statement) || statement.name.text !== name) continue;
    for (const member of statement.members) {
      const memberName = nameText(member.name);
      if (memberName === undefined) continue;
      const comments = ts.getLeadingCommentRanges(text, member.getFullStart()) ?? [];
      const doc = comments.map((c) => text.slice(c.pos, c.end)).join("\n");
      const actions = new Set(
        [...doc.matchAll(/IAM:\s*((?:ec2:\w+(?:,\s*)?)+)/g)].flatMap((m) =>
          (m[1] ?? "").split(/,\s*/).map((a) => a.replace(/^ec2:/, "")),
        ),
      );
      out.set(memberName, actions);
    }
  }
  return out;
}

/** Relative module specifiers a module loads at run time: static imports, re-exports, `import("...")`. */
export function runtimeImports(file: string, text: string): string[] {
  const source = parse(file, text);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      if (!typeOnly) out.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined) {
      if (!node.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) out.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      out.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out.filter((s) => s.startsWith("."));
}

/** Resolves `./x.js` from `fromFile` to the TypeScript source beside it. */
function resolveSource(fromFile: string, specifier: string): string {
  return resolve(dirname(fromFile), specifier).replace(/\.js$/, ".ts");
}

/** Every module reachable from `entries` (absolute paths) through runtime imports. */
export function reachableModules(entries: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const stack = [...entries];
  for (let file = stack.pop(); file !== undefined; file = stack.pop()) {
    if (seen.has(file)) continue;
    if (!existsSync(file)) throw new Error(`${file} is imported but does not exist`);
    seen.add(file);
    for (const specifier of runtimeImports(file, readFileSync(file, "utf8"))) {
      stack.push(resolveSource(file, specifier));
    }
  }
  return seen;
}

/**
 * Which of `methodNames` the modules use, outside the bodies of classes implementing one of `interfaces`.
 * Declarations of members (in interfaces, classes, object types) are not uses.
 */
export function usedMethods(
  files: Iterable<string>,
  methodNames: ReadonlySet<string>,
  interfaces: ReadonlySet<string>,
): Set<string> {
  const used = new Set<string>();
  for (const file of files) {
    const source = parse(file, readFileSync(file, "utf8"));
    const visit = (node: ts.Node): void => {
      if (ts.isClassDeclaration(node) && implementedInterfaces(node).some((i) => interfaces.has(i))) return;
      if (ts.isIdentifier(node) && methodNames.has(node.text)) {
        const parent = node.parent;
        const isMemberDeclaration =
          (ts.isMethodSignature(parent) ||
            ts.isPropertySignature(parent) ||
            ts.isMethodDeclaration(parent) ||
            ts.isPropertyDeclaration(parent)) &&
          parent.name === node;
        if (!isMemberDeclaration) used.add(node.text);
      }
      if (
        ts.isElementAccessExpression(node) &&
        ts.isStringLiteralLike(node.argumentExpression) &&
        methodNames.has(node.argumentExpression.text)
      ) {
        used.add(node.argumentExpression.text);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return used;
}

/** The entry modules of each command: the string-literal `import("...")` calls in its `commands` entry. */
/** The module a value named `name` is imported from, in `source`; undefined when it is not imported. */
function moduleOfImport(source: ts.SourceFile, name: string): string | undefined {
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const bindings = statement.importClause?.namedBindings;
    if (bindings !== undefined && ts.isNamedImports(bindings)) {
      if (bindings.elements.some((e) => e.name.text === name && !e.isTypeOnly))
        return statement.moduleSpecifier.text;
    }
  }
  return undefined;
}

export function commandEntries(cliMainFile: string): Map<string, string[]> {
  const text = readFileSync(cliMainFile, "utf8");
  const source = parse(cliMainFile, text);
  const out = new Map<string, string[]>();
  const visit = (node: ts.Node): void => {
    if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      node.name.text === "commands" &&
      node.initializer !== undefined &&
      ts.isObjectLiteralExpression(node.initializer)
    ) {
      for (const property of node.initializer.properties) {
        const name = nameText(property.name);
        if (name === undefined) continue;
        // `bridge: loadBridge`: a loader imported from another module; that module's imports are the entry.
        const loader =
          ts.isPropertyAssignment(property) && ts.isIdentifier(property.initializer)
            ? moduleOfImport(source, property.initializer.text)
            : undefined;
        if (loader !== undefined) {
          const file = resolveSource(cliMainFile, loader);
          out.set(
            name,
            runtimeImports(file, readFileSync(file, "utf8")).map((s) => resolveSource(file, s)),
          );
          continue;
        }
        out.set(
          name,
          runtimeImports(cliMainFile, property.getText(source)).map((s) => resolveSource(cliMainFile, s)),
        );
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** Every .ts file under `dir`. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
}

/** The adapters under `srcDir`: modules, outside `excludedDir`, that import an `XCommand` from the SDK. */
export function findAdapters(root: string, srcDir: string, excludedDir: string): AdapterModel[] {
  return sourceFiles(srcDir)
    .filter((f) => !f.startsWith(`${excludedDir}/`))
    .flatMap((f) => {
      const text = readFileSync(f, "utf8");
      if (!text.includes(SDK_MODULE)) return [];
      const model = analyzeAdapter(relative(root, f), text);
      return model.importedOperations.size > 0 ? [model] : [];
    });
}
