"use client";

import { type FormEvent, useEffect, useId, useRef, useState } from "react";
import { Busy, ErrorNote } from "@/ui/feedback.tsx";
import styles from "./commands.module.css";
import { runShell, type ShellEvent } from "./shell-stream.ts";

interface Chunk {
  stream: "stdout" | "stderr";
  text: string;
}

type Run =
  | { phase: "idle" }
  | { phase: "running"; command: string }
  | { phase: "finished"; command: string; exit: ShellEvent | null; stopped: boolean };

/**
 * A terminal-like runner for one computer: each command runs in the home (or the folder given), its
 * output streams into the box as the computer writes it, and the exit code closes it. Admins only
 * (the api's rule); the caller renders this only for them.
 */
export function CommandRunner({ workspaceId, computerId }: { workspaceId: string; computerId: string }) {
  const [command, setCommand] = useState("");
  const [cwd, setCwd] = useState("");
  const [chunks, setChunks] = useState<Chunk[]>([]);
  const [run, setRun] = useState<Run>({ phase: "idle" });
  const [error, setError] = useState<unknown>(null);
  const abort = useRef<AbortController | null>(null);
  const output = useRef<HTMLPreElement>(null);
  const ids = useId();

  // Leaving the page ends a command still running (closing the stream kills it on the computer).
  useEffect(() => () => abort.current?.abort(), []);
  // Follow the output as it grows, like a terminal.
  // biome-ignore lint/correctness/useExhaustiveDependencies: scrolls whenever output arrives
  useEffect(() => {
    const pre = output.current;
    if (pre) pre.scrollTop = pre.scrollHeight;
  }, [chunks, run]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const text = command.trim();
    if (!text || run.phase === "running") return;
    const controller = new AbortController();
    abort.current = controller;
    setChunks([]);
    setError(null);
    setRun({ phase: "running", command: text });
    let exit: ShellEvent | null = null;
    try {
      await runShell({
        workspaceId,
        computerId,
        request: { command: text, ...(cwd.trim() ? { cwd: cwd.trim() } : {}) },
        signal: controller.signal,
        onEvent: (shellEvent) => {
          if (shellEvent.type === "stdout" || shellEvent.type === "stderr") {
            const stream = shellEvent.type;
            const data = shellEvent.data ?? "";
            // Consecutive output of one stream is one piece of text, not thousands of spans.
            setChunks((old) => {
              const last = old.at(-1);
              return last?.stream === stream
                ? [...old.slice(0, -1), { stream, text: last.text + data }]
                : [...old, { stream, text: data }];
            });
          } else exit = shellEvent;
        },
      });
    } catch (cause) {
      if (!controller.signal.aborted) setError(cause);
    } finally {
      abort.current = null;
      setRun({ phase: "finished", command: text, exit, stopped: controller.signal.aborted });
    }
  };

  const running = run.phase === "running";
  return (
    <div className="stack">
      <form className={styles.form} onSubmit={submit}>
        <div className={`field ${styles.command}`}>
          <label htmlFor={`${ids}-command`}>Command</label>
          <input
            id={`${ids}-command`}
            className="mono"
            value={command}
            onChange={(event) => setCommand(event.target.value)}
            placeholder="ls -la"
            autoComplete="off"
            spellCheck={false}
            required
          />
        </div>
        <div className={`field ${styles.cwd}`}>
          <label htmlFor={`${ids}-cwd`}>Folder</label>
          <input
            id={`${ids}-cwd`}
            className="mono"
            value={cwd}
            onChange={(event) => setCwd(event.target.value)}
            placeholder="home"
            aria-describedby={`${ids}-cwd-hint`}
            autoComplete="off"
            spellCheck={false}
          />
        </div>
        <div className="row">
          <button type="submit" className="primary" disabled={running || !command.trim()}>
            Run
          </button>
          {running ? (
            // Not "Stop": that is the computer's own button at the top of the page.
            <button type="button" onClick={() => abort.current?.abort()}>
              Interrupt
            </button>
          ) : null}
        </div>
      </form>
      <p id={`${ids}-cwd-hint`} className="muted small">
        The folder is relative to the computer's home; leave it empty to run in the home itself.
      </p>
      {running ? <Busy label={`Running ${run.command}…`} /> : null}
      <ErrorNote error={error} prefix="The command did not run" />
      <pre
        ref={output}
        className={styles.output}
        role="log"
        // every chunk read aloud would drown the reader; the end of the run is announced below
        aria-live="off"
        aria-label="Shell output (standard error in italics)"
        data-testid="command-output"
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the output scrolls; keyboard users need to reach it
        tabIndex={0}
      >
        {run.phase === "idle" ? (
          <span className={styles.muted}>Output appears here.</span>
        ) : (
          <>
            <span className={styles.prompt}>$ {run.command}</span>
            {"\n"}
            {chunks.map((chunk, index) => (
              <span
                // Chunks only ever grow at the end, so their positions are stable keys.
                // biome-ignore lint/suspicious/noArrayIndexKey: see above
                key={index}
                className={chunk.stream === "stderr" ? styles.stderr : undefined}
              >
                {chunk.text}
              </span>
            ))}
            {run.phase === "finished" ? <ExitLine run={run} /> : null}
          </>
        )}
      </pre>
    </div>
  );
}

function ExitLine({ run }: { run: Extract<Run, { phase: "finished" }> }) {
  const { exit } = run;
  let text: string;
  if (run.stopped) text = "[interrupted: the command was killed]";
  else if (!exit) text = "[the output ended without an exit code]";
  else if (exit.type === "error") text = `[error ${exit.code ?? ""}: ${exit.message ?? "the stream broke"}]`;
  else
    text =
      `[exit code ${exit.code ?? "?"}]` +
      (exit.message ? ` ${exit.message}` : "") +
      (exit.truncated ? " (output was cut: it passed the size limit)" : "");
  const failed = run.stopped || !exit || exit.type === "error" || exit.code !== 0;
  return (
    <span className={failed ? styles.exitFailed : styles.exitOk} role="status">
      {`\n${text}`}
    </span>
  );
}
