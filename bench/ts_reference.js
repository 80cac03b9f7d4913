// The TypeScript compiler's answer for bench_graph.py: for each sampled function or
// method, where it is called (language service findReferences, the references that
// are calls), what it calls (call hierarchy, outgoing calls) and the names of every
// call written in it (for the name-only baseline).
// Usage: node ts_reference.js TYPESCRIPT_LIB CORPUS_ROOT < sample.json > answer.json
// sample.json: [{path, line, column}] (corpus-relative path, 1-based line, 0-based
// column of the definition's name); answer: one {callers, callees, calledNames} each,
// callers as [path, line], callees as [path, line, name].
"use strict";
const fs = require("fs");
const path = require("path");

const [tsLib, root] = process.argv.slice(2);
const ts = require(tsLib);
const sample = JSON.parse(fs.readFileSync(0, "utf8"));

const files = [];
(function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full);
    else if (/\.(ts|tsx|mts|cts)$/.test(entry.name)) files.push(full);
  }
})(root);

const options = {
  target: ts.ScriptTarget.ES2020,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  strict: true,
  skipLibCheck: true,
  lib: ["lib.es2020.d.ts", "lib.dom.d.ts"],
};
const host = {
  getScriptFileNames: () => files,
  getScriptVersion: () => "1",
  getScriptSnapshot: (file) =>
    fs.existsSync(file) ? ts.ScriptSnapshot.fromString(fs.readFileSync(file, "utf8")) : undefined,
  getCurrentDirectory: () => root,
  getCompilationSettings: () => options,
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  fileExists: ts.sys.fileExists,
  readFile: ts.sys.readFile,
  readDirectory: ts.sys.readDirectory,
  directoryExists: ts.sys.directoryExists,
  getDirectories: ts.sys.getDirectories,
};
const service = ts.createLanguageService(host, ts.createDocumentRegistry());
const program = service.getProgram();

function inCorpus(file) {
  const relative = path.relative(root, file);
  return relative.startsWith("..") || path.isAbsolute(relative) ? null : relative.split(path.sep).join("/");
}

function lineOf(sourceFile, position) {
  return sourceFile.getLineAndCharacterOfPosition(position).line + 1;
}

function innermostAt(node, position) {
  const inside = ts.forEachChild(node, (child) =>
    child.getStart() <= position && position < child.getEnd() ? child : undefined);
  return inside ? innermostAt(inside, position) : node;
}

// f(...), new F(...), x.f(...), x?.f(...): the identifier at a reference is what is called.
function isCalled(identifier) {
  let callee = identifier;
  if (ts.isPropertyAccessExpression(callee.parent) && callee.parent.name === callee) callee = callee.parent;
  const parent = callee.parent;
  return (ts.isCallExpression(parent) || ts.isNewExpression(parent)) && parent.expression === callee;
}

function calledName(call) {
  const callee = call.expression;
  if (ts.isIdentifier(callee)) return callee.text;
  if (ts.isPropertyAccessExpression(callee)) return callee.name.text;
  return null;
}

const answers = sample.map(({ path: relative, line, column }) => {
  const file = path.join(root, relative);
  const sourceFile = program.getSourceFile(file);
  const position = sourceFile.getPositionOfLineAndCharacter(line - 1, column);
  const callers = [];
  for (const symbol of service.findReferences(file, position) || []) {
    for (const ref of symbol.references) {
      const refPath = inCorpus(ref.fileName);
      if (refPath === null || ref.isDefinition) continue;
      const refFile = program.getSourceFile(ref.fileName);
      const node = innermostAt(refFile, ref.textSpan.start);
      if (ts.isIdentifier(node) && isCalled(node)) callers.push([refPath, lineOf(refFile, ref.textSpan.start)]);
    }
  }
  const callees = [];
  for (const call of service.provideCallHierarchyOutgoingCalls(file, position) || []) {
    const toPath = inCorpus(call.to.file);
    if (toPath === null) continue;
    const toFile = program.getSourceFile(call.to.file);
    callees.push([toPath, lineOf(toFile, call.to.selectionSpan.start), call.to.name]);
  }
  const calledNames = new Set();
  let declaration = innermostAt(sourceFile, position);
  while (declaration && !ts.isFunctionLike(declaration)) declaration = declaration.parent;
  (function visit(node) {
    if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
      const name = calledName(node);
      if (name) calledNames.add(name);
    }
    ts.forEachChild(node, visit);
  })(declaration || sourceFile);
  return { callers, callees, calledNames: [...calledNames] };
});
process.stdout.write(JSON.stringify({ version: ts.version, answers }));
