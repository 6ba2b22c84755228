// The calculator's Python, in a worker so the page stays responsive while it starts.
//
// It loads the Pyodide runtime served by the site itself (CPython compiled to
// WebAssembly, with its standard library only), unpacks the library's calculator
// (the zip the book's build traced and packed), and runs the command line:
// transformer_calculator.command_line.cli.main(argv), exactly what `python -m transformer_calculator`
// runs. Nothing here computes a number: it passes argv in and the output out.
//
// Messages in:  {kind: "start", runtime, bundle}
//               {kind: "run", id, argv, files: {path: Uint8Array}}
// Messages out: {kind: "ready", seconds, stages}  or  {kind: "failed", message}
//               {kind: "result", id, json: {code, out, err}, text: {code, out, err}}

const LIB = "/home/pyodide/lib";

const PAGE_PY = `
import contextlib, io, sys
sys.path.insert(0, "${LIB}")
from transformer_calculator.command_line.cli import main

def run(argv):
    """The command line on argv: its exit code, standard output and standard error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
`;

let started = null;

async function start(runtime, bundle) {
  const t0 = performance.now();
  const zip = fetch(bundle).then((r) => {
    if (!r.ok) throw new Error(`the calculator's code (${bundle}) answered ${r.status}`);
    return r.arrayBuffer();
  });
  const { loadPyodide } = await import(new URL("pyodide.mjs", runtime).href);
  const py = await loadPyodide({ indexURL: runtime, packages: [] });
  const t1 = performance.now();
  py.unpackArchive(await zip, "zip", { extractDir: LIB });
  py.runPython(PAGE_PY);  // imports the calculator
  const t2 = performance.now();
  return { py, run: py.globals.get("run"), seconds: (t2 - t0) / 1000,
           stages: { python: (t1 - t0) / 1000, calculator: (t2 - t1) / 1000 } };
}

function call(env, argv) {
  const result = env.run(env.py.toPy(argv));
  const [code, out, err] = result.toJs();
  result.destroy();
  return { code, out, err };
}

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.kind === "start") {
    started = started || start(msg.runtime, msg.bundle);
    try {
      const env = await started;
      self.postMessage({ kind: "ready", seconds: env.seconds, stages: env.stages });
    } catch (err) {
      self.postMessage({ kind: "failed", message: String(err && err.message || err) });
    }
    return;
  }
  if (msg.kind === "run") {
    const env = await started;
    let json, text;
    try {
      for (const [path, bytes] of Object.entries(msg.files || {})) {
        env.py.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
        env.py.FS.writeFile(path, bytes);
      }
      json = call(env, [...msg.argv, "--json"]);
      text = json.code === 0 ? call(env, msg.argv) : json;
    } catch (err) {  // the command line answers every error itself; this is the page's own
      const line = `error: the page could not run the calculator: ${String(err && err.message || err).split("\n")[0]}`;
      json = text = { code: 1, out: "", err: line };
    }
    self.postMessage({ kind: "result", id: msg.id, json, text });
  }
};
