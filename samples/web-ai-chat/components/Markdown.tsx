// A small Markdown renderer for streamed answers: React elements only (never raw HTML), tolerant of half-written
// input (an unclosed code fence renders as code until the end). Headings, paragraphs, lists, quotes, rules, fenced
// code, inline code, bold, italic and http(s)/mailto links.

import { Fragment, type ReactNode } from "react";

type MarkdownBlock =
  | { kind: "heading"; level: number; text: string }
  | { kind: "paragraph"; text: string }
  | { kind: "code"; language: string; text: string }
  | { kind: "list"; ordered: boolean; items: string[] }
  | { kind: "quote"; text: string }
  | { kind: "rule" };

const LIST_ITEM = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/;

export function parseBlocks(source: string): MarkdownBlock[] {
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  const blocks: MarkdownBlock[] = [];
  let paragraph: string[] = [];
  const flush = (): void => {
    if (paragraph.length) blocks.push({ kind: "paragraph", text: paragraph.join("\n") });
    paragraph = [];
  };
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index];
    const fence = /^\s{0,3}(```|~~~)\s*([\w+-]*)/.exec(line);
    if (fence) {
      flush();
      const body: string[] = [];
      index++;
      while (index < lines.length && !lines[index].trimStart().startsWith(fence[1])) body.push(lines[index++]);
      blocks.push({ kind: "code", language: fence[2], text: body.join("\n") });
      continue;
    }
    const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      blocks.push({ kind: "heading", level: heading[1].length, text: heading[2] });
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      blocks.push({ kind: "rule" });
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      flush();
      const ordered = /\d/.test(item[1]);
      const items = [item[2]];
      while (index + 1 < lines.length) {
        const next = LIST_ITEM.exec(lines[index + 1]);
        if (next && /\d/.test(next[1]) === ordered) {
          items.push(next[2]);
        } else if (/^\s{2,}\S/.test(lines[index + 1])) {
          items[items.length - 1] += `\n${lines[index + 1].trim()}`;
        } else {
          break;
        }
        index++;
      }
      blocks.push({ kind: "list", ordered, items });
      continue;
    }
    if (/^\s{0,3}>/.test(line)) {
      flush();
      const quoted = [line.replace(/^\s{0,3}>\s?/, "")];
      while (index + 1 < lines.length && /^\s{0,3}>/.test(lines[index + 1])) {
        quoted.push(lines[++index].replace(/^\s{0,3}>\s?/, ""));
      }
      blocks.push({ kind: "quote", text: quoted.join("\n") });
      continue;
    }
    if (!line.trim()) {
      flush();
      continue;
    }
    paragraph.push(line);
  }
  flush();
  return blocks;
}

const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|\*([^*\s](?:[\s\S]*?[^*\s])?)\*|_([^_\s](?:[\s\S]*?[^_\s])?)_|\[([^\]]+)\]\(([^)\s]+)\)/g;

function safeHref(url: string): string | null {
  return /^(https?:|mailto:)/i.test(url) ? url : null;
}

export function renderInline(text: string, keyPrefix = "i"): ReactNode[] {
  const nodes: ReactNode[] = [];
  let last = 0;
  let count = 0;
  for (const match of text.matchAll(INLINE)) {
    const start = match.index ?? 0;
    if (start > last) nodes.push(...withBreaks(text.slice(last, start), `${keyPrefix}t${count}`));
    const key = `${keyPrefix}m${count++}`;
    if (match[2] !== undefined) nodes.push(<code key={key}>{match[2].replace(/^ (.*) $/, "$1")}</code>);
    else if (match[3] !== undefined || match[4] !== undefined)
      nodes.push(<strong key={key}>{renderInline(match[3] ?? match[4], key)}</strong>);
    else if (match[5] !== undefined || match[6] !== undefined)
      nodes.push(<em key={key}>{renderInline(match[5] ?? match[6], key)}</em>);
    else {
      const href = safeHref(match[8]);
      nodes.push(
        href ? (
          <a key={key} href={href} target="_blank" rel="noreferrer noopener">
            {renderInline(match[7], key)}
          </a>
        ) : (
          <Fragment key={key}>{match[0]}</Fragment>
        ),
      );
    }
    last = start + match[0].length;
  }
  if (last < text.length) nodes.push(...withBreaks(text.slice(last), `${keyPrefix}t${count}`));
  return nodes;
}

function withBreaks(text: string, key: string): ReactNode[] {
  return text.split("\n").flatMap((piece, index) => (index ? [<br key={`${key}b${index}`} />, piece] : [piece]));
}

export function Markdown({ source }: { source: string }): ReactNode {
  return (
    <div className="markdown">
      {parseBlocks(source).map((block, index) => {
        const key = `b${index}`;
        switch (block.kind) {
          case "heading": {
            const Tag = `h${Math.min(block.level + 2, 6)}` as "h3" | "h4" | "h5" | "h6";
            return <Tag key={key}>{renderInline(block.text, key)}</Tag>;
          }
          case "paragraph":
            return <p key={key}>{renderInline(block.text, key)}</p>;
          case "code":
            return (
              <pre key={key} data-language={block.language || undefined}>
                <code>{block.text}</code>
              </pre>
            );
          case "list": {
            const items = block.items.map((item, itemIndex) => (
              <li key={`${key}l${itemIndex}`}>{renderInline(item, `${key}l${itemIndex}`)}</li>
            ));
            return block.ordered ? <ol key={key}>{items}</ol> : <ul key={key}>{items}</ul>;
          }
          case "quote":
            return <blockquote key={key}>{renderInline(block.text, key)}</blockquote>;
          case "rule":
            return <hr key={key} />;
        }
      })}
    </div>
  );
}
