// Compile Pyodide's standard library to bytecode once, so the reader's browser does not.
//
//     node compile_stdlib.mjs book/_pyodide      (make setup runs it)
//
// The npm package ships python_stdlib.zip as Python source, and Pyodide imports about
// two hundred of those modules while it starts: the browser then compiles each one,
// which was most of the start-up (3.9 to 8.6 s against 1.5 to 2.6 s with this, in
// headless Chromium on a busy two-core machine). This script starts that same Pyodide
// under Node.js, compiles every module with its own CPython (so the bytecode is the
// one it runs), and writes the zip back with each `x.py` replaced by `x.pyc`
// (unchecked-hash pycs: no timestamps, the same bytes on every run). Files that are not
// Python, and any module that does not compile, stay as they were.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const folder = path.resolve(process.argv[2] || ".");
const zipPath = path.join(folder, "python_stdlib.zip");
const { loadPyodide } = await import(pathToFileURL(path.join(folder, "pyodide.mjs")).href);
const py = await loadPyodide({ indexURL: folder + path.sep });
py.FS.writeFile("/tmp/source.zip", fs.readFileSync(zipPath));
const report = py.runPython(`
import importlib.util, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc

compiled = kept = 0
with zipfile.ZipFile("/tmp/source.zip") as src, \\
        zipfile.ZipFile("/tmp/compiled.zip", "w", zipfile.ZIP_DEFLATED) as out:
    for info in src.infolist():
        data = src.read(info)
        if info.filename.endswith(".py"):
            try:
                code = compile(data, info.filename, "exec", dont_inherit=True)
            except SyntaxError:
                out.writestr(info, data)
                kept += 1
                continue
            pyc = zipfile.ZipInfo(info.filename + "c", date_time=info.date_time)
            pyc.external_attr = info.external_attr
            pyc.compress_type = zipfile.ZIP_DEFLATED
            out.writestr(pyc, bytes(_code_to_hash_pyc(
                code, importlib.util.source_hash(data), checked=False)))
            compiled += 1
        else:
            out.writestr(info, data)
f"{compiled} modules compiled, {kept} kept as source"
`);
fs.writeFileSync(zipPath, py.FS.readFile("/tmp/compiled.zip"));
console.log(`${zipPath}: ${report}, ${fs.statSync(zipPath).size} bytes`);
