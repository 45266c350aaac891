// Markdown of streamed answers through react-markdown: GitHub Flavored Markdown (tables, task lists, strikethrough,
// autolinks) by remark-gfm and code highlighting by rehype-highlight (fenced blocks that name their language).
// React elements only: raw HTML in an answer shows as text, links other than http(s)/mailto show as plain text, and
// images show their alt text (an answer must not make the browser fetch addresses the model chose).

import type { ComponentPropsWithoutRef, JSX, ReactNode } from "react";
import ReactMarkdown, { type Components, type ExtraProps } from "react-markdown";
import rehypeHighlight, { type Options as HighlightOptions } from "rehype-highlight";
import remarkGfm from "remark-gfm";

const SAFE_LINK = /^(https?:|mailto:)/i;

// Unknown languages are left as plain code; guessing a block's language on every streamed delta would be slow.
const HIGHLIGHT: HighlightOptions = { detect: false };
const REMARK_PLUGINS = [remarkGfm];
const REHYPE_PLUGINS: [[typeof rehypeHighlight, HighlightOptions]] = [[rehypeHighlight, HIGHLIGHT]];

function safeUrl(url: string): string | null {
  return SAFE_LINK.test(url.trim()) ? url : null;
}

type Props<Tag extends keyof JSX.IntrinsicElements> = ComponentPropsWithoutRef<Tag> & ExtraProps;

// Answer headings sit below the page's own (h1) and the chat's: # becomes h3.
function heading(Tag: "h3" | "h4" | "h5" | "h6") {
  return function Heading({ node: _node, ...rest }: Props<"h1">): ReactNode {
    return <Tag {...rest} />;
  };
}

const COMPONENTS: Components = {
  h1: heading("h3"),
  h2: heading("h4"),
  h3: heading("h5"),
  h4: heading("h6"),
  h5: heading("h6"),
  h6: heading("h6"),
  a({ node: _node, href, children, ...rest }: Props<"a">): ReactNode {
    if (!href) return <span className="unsafe-link">{children}</span>;
    return (
      <a {...rest} href={href} target="_blank" rel="noreferrer noopener">
        {children}
      </a>
    );
  },
  img({ alt }: Props<"img">): ReactNode {
    return alt ? <span className="image-alt">[{alt}]</span> : null;
  },
  // A wide table scrolls inside the answer instead of widening the page.
  table({ node: _node, ...rest }: Props<"table">): ReactNode {
    return (
      <div className="table-scroll">
        <table {...rest} />
      </div>
    );
  },
};

export function Markdown({ source }: { source: string }): ReactNode {
  return (
    <div className="markdown">
      <ReactMarkdown
        remarkPlugins={REMARK_PLUGINS}
        rehypePlugins={REHYPE_PLUGINS}
        components={COMPONENTS}
        urlTransform={(url, key) => (key === "href" ? safeUrl(url) : null)}
      >
        {source}
      </ReactMarkdown>
    </div>
  );
}
