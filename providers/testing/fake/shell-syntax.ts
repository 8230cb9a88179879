/**
 * The fake shell's grammar: a small subset of POSIX sh, so that every command the shared suites
 * send means the same thing here and on a real shell.
 *
 *   program   := (and_or (";" | "&" | newline))* and_or?
 *   and_or    := simple (("&&" | "||") newline* simple)*
 *   simple    := (NAME=word)* (word | redirect)*
 *   redirect  := [fd] (">" | ">>") word | [fd] ">&" word
 *   word      := unquoted text, '…', "…" (with $ expansion and \ escapes), \c, $NAME, ${NAME},
 *                $0…$9, $#, $?, $!
 *
 * `#` starts a comment at the start of a word. Pipes, subshells, `<`, command substitution and
 * compound commands are refused as syntax errors rather than half-supported.
 */

export type WordPart =
  | { kind: "text"; text: string; quoted: boolean }
  | { kind: "param"; name: string; quoted: boolean };
export type Word = WordPart[];

export interface Redirect {
  fd: number;
  op: ">" | ">>" | ">&";
  target: Word;
}

export interface SimpleCommand {
  assignments: { name: string; value: Word }[];
  words: Word[];
  redirects: Redirect[];
}

export interface AndOr {
  first: SimpleCommand;
  rest: { op: "&&" | "||"; command: SimpleCommand }[];
}

export interface Item {
  andOr: AndOr;
  background: boolean;
}

export type Program = Item[];

export class ShellSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ShellSyntaxError";
  }
}

type Operator = ";" | "&" | "&&" | "||" | "\n";

type Token =
  | { kind: "word"; word: Word }
  | { kind: "op"; op: Operator }
  | { kind: "redirect"; fd: number | null; op: Redirect["op"] };

const METACHARACTERS = new Set([" ", "\t", "\n", ";", "&", "|", "<", ">", "(", ")"]);
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SPECIAL_PARAMS = new Set(["!", "?", "#"]);

const unsupported = (what: string) => new ShellSyntaxError(`${what} is not supported by the fake shell`);

class Tokenizer {
  private at = 0;
  private readonly tokens: Token[] = [];

  constructor(private readonly source: string) {}

  run(): Token[] {
    const s = this.source;
    while (this.at < s.length) {
      const c = s[this.at] ?? "";
      if (c === " " || c === "\t") {
        this.at++;
      } else if (c === "\\" && s[this.at + 1] === "\n") {
        this.at += 2;
      } else if (c === "#") {
        while (this.at < s.length && s[this.at] !== "\n") this.at++;
      } else if (c === "\n" || c === ";") {
        if (c === ";" && s[this.at + 1] === ";") throw new ShellSyntaxError('unexpected ";;"');
        this.tokens.push({ kind: "op", op: c });
        this.at++;
      } else if (c === "&") {
        const double = s[this.at + 1] === "&";
        this.tokens.push({ kind: "op", op: double ? "&&" : "&" });
        this.at += double ? 2 : 1;
      } else if (c === "|") {
        if (s[this.at + 1] !== "|") throw unsupported("a pipe (|)");
        this.tokens.push({ kind: "op", op: "||" });
        this.at += 2;
      } else if (c === ">") {
        this.redirect(null);
      } else if (c === "<") {
        throw unsupported("input redirection (<)");
      } else if (c === "(" || c === ")") {
        throw unsupported("a subshell ( … )");
      } else {
        this.word();
      }
    }
    return this.tokens;
  }

  private redirect(fd: number | null): void {
    const s = this.source;
    this.at++;
    let op: Redirect["op"] = ">";
    if (s[this.at] === ">") {
      op = ">>";
      this.at++;
    } else if (s[this.at] === "&") {
      op = ">&";
      this.at++;
    } else if (s[this.at] === "|") {
      this.at++;
    }
    this.tokens.push({ kind: "redirect", fd, op });
  }

  private word(): void {
    const s = this.source;
    const parts: Word = [];
    const text = (value: string, quoted: boolean) => {
      const last = parts.at(-1);
      if (last?.kind === "text" && last.quoted === quoted) last.text += value;
      else parts.push({ kind: "text", text: value, quoted });
    };
    while (this.at < s.length) {
      const c = s[this.at] ?? "";
      if (METACHARACTERS.has(c)) {
        const only = parts[0];
        // Digits right before ">" are the fd it redirects (2>file), not a word.
        if (
          c === ">" &&
          parts.length === 1 &&
          only?.kind === "text" &&
          !only.quoted &&
          /^\d$/.test(only.text)
        ) {
          this.redirect(Number(only.text));
          return;
        }
        break;
      }
      if (c === "'") {
        const end = s.indexOf("'", this.at + 1);
        if (end < 0) throw new ShellSyntaxError("unterminated quoted string");
        text(s.slice(this.at + 1, end), true);
        this.at = end + 1;
      } else if (c === '"') {
        this.doubleQuoted(parts, text);
      } else if (c === "\\") {
        const next = s[this.at + 1];
        if (next === undefined) {
          text("\\", false);
          this.at++;
        } else if (next === "\n") {
          this.at += 2;
        } else {
          text(next, true);
          this.at += 2;
        }
      } else if (c === "$") {
        this.param(parts, text, false);
      } else if (c === "`") {
        throw unsupported("command substitution (`…`)");
      } else {
        text(c, false);
        this.at++;
      }
    }
    this.tokens.push({ kind: "word", word: parts });
  }

  private doubleQuoted(parts: Word, text: (value: string, quoted: boolean) => void): void {
    const s = this.source;
    this.at++;
    // An empty "" is still a word of its own.
    text("", true);
    for (;;) {
      const c = s[this.at];
      if (c === undefined) throw new ShellSyntaxError("unterminated quoted string");
      if (c === '"') {
        this.at++;
        return;
      }
      if (c === "\\") {
        const next = s[this.at + 1];
        if (next === "$" || next === "`" || next === '"' || next === "\\") {
          text(next, true);
          this.at += 2;
        } else if (next === "\n") {
          this.at += 2;
        } else {
          text("\\", true);
          this.at++;
        }
      } else if (c === "$") {
        this.param(parts, text, true);
      } else if (c === "`") {
        throw unsupported("command substitution (`…`)");
      } else {
        text(c, true);
        this.at++;
      }
    }
  }

  private param(parts: Word, text: (value: string, quoted: boolean) => void, quoted: boolean): void {
    const s = this.source;
    const next = s[this.at + 1] ?? "";
    if (next === "{") {
      const end = s.indexOf("}", this.at + 2);
      if (end < 0) throw new ShellSyntaxError("missing }");
      const name = s.slice(this.at + 2, end);
      if (!NAME.test(name) && !/^\d$/.test(name) && !SPECIAL_PARAMS.has(name)) {
        throw new ShellSyntaxError(`\${${name}}: bad substitution`);
      }
      parts.push({ kind: "param", name, quoted });
      this.at = end + 1;
    } else if (next === "(") {
      throw unsupported("command substitution $( … )");
    } else if (/[A-Za-z_]/.test(next)) {
      let end = this.at + 1;
      while (end < s.length && /[A-Za-z0-9_]/.test(s[end] ?? "")) end++;
      parts.push({ kind: "param", name: s.slice(this.at + 1, end), quoted });
      this.at = end;
    } else if (/\d/.test(next) || SPECIAL_PARAMS.has(next)) {
      parts.push({ kind: "param", name: next, quoted });
      this.at += 2;
    } else if (next === "$" || next === "@" || next === "*" || next === "-") {
      throw unsupported(`$${next}`);
    } else {
      text("$", quoted);
      this.at++;
    }
  }
}

export function tokenize(source: string): Token[] {
  return new Tokenizer(source).run();
}

const isOp = (token: Token | undefined, ...ops: Operator[]): token is Extract<Token, { kind: "op" }> =>
  token?.kind === "op" && ops.includes(token.op);

const describe = (token: Token | undefined) => {
  if (!token) return "end of input";
  if (token.kind === "op") return token.op === "\n" ? "newline" : `"${token.op}"`;
  if (token.kind === "redirect") return `"${token.op}"`;
  return "a word";
};

/** Parses a whole program; any syntax error means none of it runs, as in sh. */
export function parse(source: string): Program {
  const tokens = tokenize(source);
  let at = 0;
  const peek = () => tokens[at];

  const simple = (): SimpleCommand => {
    const command: SimpleCommand = { assignments: [], words: [], redirects: [] };
    let consumed = false;
    for (let token = peek(); token && token.kind !== "op"; token = peek()) {
      consumed = true;
      at++;
      if (token.kind === "redirect") {
        const target = peek();
        if (target?.kind !== "word")
          throw new ShellSyntaxError(`unexpected ${describe(target)} after "${token.op}"`);
        at++;
        command.redirects.push({ fd: token.fd ?? 1, op: token.op, target: target.word });
        continue;
      }
      const assignment = command.words.length === 0 ? asAssignment(token.word) : null;
      if (assignment) command.assignments.push(assignment);
      else command.words.push(token.word);
    }
    if (!consumed) throw new ShellSyntaxError(`unexpected ${describe(peek())}`);
    return command;
  };

  const andOr = (): AndOr => {
    const result: AndOr = { first: simple(), rest: [] };
    for (let token = peek(); isOp(token, "&&", "||"); token = peek()) {
      at++;
      while (isOp(peek(), "\n")) at++;
      result.rest.push({ op: token.op === "&&" ? "&&" : "||", command: simple() });
    }
    return result;
  };

  const program: Program = [];
  for (;;) {
    while (isOp(peek(), "\n")) at++;
    if (at >= tokens.length) return program;
    const item = andOr();
    const separator = peek();
    if (separator === undefined) {
      program.push({ andOr: item, background: false });
      return program;
    }
    if (!isOp(separator, ";", "&", "\n")) throw new ShellSyntaxError(`unexpected ${describe(separator)}`);
    at++;
    program.push({ andOr: item, background: separator.op === "&" });
  }
}

function asAssignment(word: Word): { name: string; value: Word } | null {
  const first = word[0];
  if (first?.kind !== "text" || first.quoted) return null;
  const match = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(first.text);
  if (!match?.[1]) return null;
  const rest = first.text.slice(match[0].length);
  const value: Word =
    rest === "" ? word.slice(1) : [{ kind: "text", text: rest, quoted: false }, ...word.slice(1)];
  return { name: match[1], value };
}
