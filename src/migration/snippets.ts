import type { ClientStackName } from '../clients/stack.js';
import type { OperationSpec, PagedTarget } from '../operations.js';
import type { SuccessorPaging } from '../translate/plan.js';

/**
 * Code that replaces a legacy call, in the language of the caller's stack (docs/migration.md, "Code
 * in the caller's own language"): it makes the `.cp` request(s) that replace one of the caller's own
 * calls (its parameters, its paging) and prints what the legacy result gave, one `item <mediaId>` line
 * per item and `total <totalDesigns>`. The key is read from CP_APP_KEY, `YOUR_APP_KEY` otherwise: never
 * a real one. Every template is run against the demo upstream in test/snippets.test.ts.
 */

export const SNIPPET_LANGUAGES = ['php', 'python', 'csharp', 'java', 'perl', 'javascript', 'curl'] as const;
export type SnippetLanguage = (typeof SNIPPET_LANGUAGES)[number];

/** What a snippet requests: the first request, and how the pages from it on make the legacy result. */
export interface SnippetRequest {
  /** The first request, absolute, without its key. */
  readonly url: string;
  /** Null: the one page of `url` is the result. */
  readonly paging: (SuccessorPaging & { readonly pageParam: string }) | null;
}

/** The language to send a team first, by its stack; curl for a stack of no language here. */
export function languageOf(stack: ClientStackName | null): SnippetLanguage {
  if (stack === null) return 'curl';
  const prefix = stack.split('-')[0];
  const byPrefix: Readonly<Record<string, SnippetLanguage>> = {
    php: 'php',
    python: 'python',
    dotnet: 'csharp',
    java: 'java',
    perl: 'perl',
    node: 'javascript',
    browser: 'javascript',
  };
  return byPrefix[prefix as string] ?? 'curl';
}

/**
 * Whether one call of `operation` returned a whole list (every page of its replacement), as its row of
 * the table translates it: the translator is asked, with no arguments, what it plans.
 */
export function returnsWholeList(operation: OperationSpec): boolean {
  let whole = false;
  const args = Object.fromEntries(operation.params.map((param) => [param.name, param.type === 'int' ? 0 : null]));
  const probe: PagedTarget<null> = {
    single: () => null,
    window: () => null,
    allPages: () => {
      whole = true;
      return null;
    },
    merchandiseIds: () => null,
    sort: () => null,
    legacyPageWindow: () => ({ offset: 0, count: 0 }),
    itemWindow: () => null,
  };
  operation.translate(args, probe);
  return whole;
}

/** Page requests listed in an answer at most; a snippet requests the rest itself. */
const MAX_LISTED_PAGES = 100;

/** What every template is filled with: where to start, and what to keep. */
interface Filled {
  readonly base: string;
  readonly pageParam: string | null;
  readonly page: number;
  /** Pages to request; null: until the total is reached. */
  readonly pages: number | null;
  readonly skip: number;
  readonly take: number | null;
}

/** The URL without its page parameter, and that page: where a paged snippet starts. */
function filled({ url, paging }: SnippetRequest): Filled {
  if (paging === null) return { base: url, pageParam: null, page: 1, pages: 1, skip: 0, take: null };
  // Relative when there is no base to reach the endpoints at (the demo upstream answers on the proxy's own host).
  const relative = url.startsWith('/');
  const parsed = new URL(url, 'http://relative.invalid');
  const page = Number(parsed.searchParams.get(paging.pageParam));
  // The request names no page under that parameter (the profile was renamed since): it stands alone.
  if (!parsed.searchParams.has(paging.pageParam) || !Number.isSafeInteger(page)) return filled({ url, paging: null });
  parsed.searchParams.delete(paging.pageParam);
  return {
    base: relative ? `${parsed.pathname}${parsed.search}` : parsed.href,
    pageParam: paging.pageParam,
    page,
    pages: paging.pages,
    skip: paging.skip,
    take: paging.take,
  };
}

/**
 * A string literal of JavaScript, Python, Java and C#: JSON's escapes are theirs, and every character
 * past ASCII as `\uXXXX`, since C# takes U+0085, U+2028 and U+2029 for line ends.
 */
const cString = (text: string): string =>
  JSON.stringify(text).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
/** A single-quoted literal of PHP and Perl, where only `\` and `'` are escaped. */
const singleQuoted = (text: string): string => `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;
/** A single-quoted word of the shell. */
const shellQuoted = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

export function snippetsFor(request: SnippetRequest): Record<SnippetLanguage, string> {
  const f = filled(request);
  return { php: php(f), python: python(f), csharp: csharp(f), java: java(f), perl: perl(f), javascript: javascript(f), curl: curl(f) };
}

const orNone = (value: number | null, none: string): string => (value === null ? none : String(value));

function php(f: Filled): string {
  return `<?php
// The .cp request(s) that replace your legacy call. Needs ext-simplexml; set CP_APP_KEY to your appKey.
$appKey = getenv('CP_APP_KEY') ?: 'YOUR_APP_KEY';
$base = ${singleQuoted(f.base)};
$pageParam = ${f.pageParam === null ? 'null' : singleQuoted(f.pageParam)};
$page = ${f.page};
$pages = ${orNone(f.pages, 'null')}; // null: every page, until the total
$ids = [];
$fetched = 0;
while (true) {
    $url = $base . '&appKey=' . rawurlencode($appKey) . ($pageParam === null ? '' : "&$pageParam=$page");
    $body = file_get_contents($url);
    if ($body === false) {
        fwrite(STDERR, "the request failed\\n");
        exit(1);
    }
    $result = simplexml_load_string($body);
    $count = 0;
    foreach ($result->mainResults->searchResultItem as $item) {
        $ids[] = (string) $item['mediaId'];
        $count++;
    }
    $fetched++;
    $done = $pages !== null ? $fetched >= $pages : ($count === 0 || count($ids) >= (int) $result['totalDesigns']);
    if ($pageParam === null || $done) {
        break;
    }
    $page++;
}
// The items your legacy call returned.
foreach (array_slice($ids, ${f.skip}${f.take === null ? '' : `, ${f.take}`}) as $id) {
    echo "item $id\\n";
}
echo "total {$result['totalDesigns']}\\n";
`;
}

function python(f: Filled): string {
  return `# The .cp request(s) that replace your legacy call (Python 3, standard library only).
# Set CP_APP_KEY to your appKey.
import os
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

app_key = os.environ.get("CP_APP_KEY", "YOUR_APP_KEY")
base = ${cString(f.base)}
page_param = ${f.pageParam === null ? 'None' : cString(f.pageParam)}
page = ${f.page}
pages = ${orNone(f.pages, 'None')}  # None: every page, until the total
ids = []
fetched = 0
while True:
    url = base + "&appKey=" + urllib.parse.quote(app_key, safe="")
    if page_param is not None:
        url += "&%s=%d" % (page_param, page)
    with urllib.request.urlopen(url) as response:
        result = ET.fromstring(response.read())
    items = result.findall("./mainResults/searchResultItem")
    ids += [item.get("mediaId") for item in items]
    fetched += 1
    done = fetched >= pages if pages is not None else (not items or len(ids) >= int(result.get("totalDesigns")))
    if page_param is None or done:
        break
    page += 1
# The items your legacy call returned.
for media_id in ids[${f.skip}:${f.take === null ? '' : f.skip + f.take}]:
    print("item", media_id)
print("total", result.get("totalDesigns"))
`;
}

function csharp(f: Filled): string {
  return `// The .cp request(s) that replace your legacy call (.NET Framework or Mono: mcs -r:System.Xml Replacement.cs).
// Set CP_APP_KEY to your appKey.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Net;
using System.Text;
using System.Xml;

class Replacement
{
    static void Main()
    {
        var appKey = Environment.GetEnvironmentVariable("CP_APP_KEY") ?? "YOUR_APP_KEY";
        var baseUrl = ${cString(f.base)};
        string pageParam = ${f.pageParam === null ? 'null' : cString(f.pageParam)};
        var page = ${f.page};
        int? pages = ${orNone(f.pages, 'null')}; // null: every page, until the total
        var ids = new List<string>();
        var fetched = 0;
        XmlElement result;
        using (var web = new WebClient { Encoding = Encoding.UTF8 })
        {
            while (true)
            {
                var url = baseUrl + "&appKey=" + Uri.EscapeDataString(appKey) + (pageParam == null ? "" : "&" + pageParam + "=" + page);
                var document = new XmlDocument { XmlResolver = null };
                document.LoadXml(web.DownloadString(url));
                result = document.DocumentElement;
                var items = result.SelectNodes("mainResults/searchResultItem");
                foreach (XmlElement item in items) ids.Add(item.GetAttribute("mediaId"));
                fetched++;
                var done = pages.HasValue
                    ? fetched >= pages.Value
                    : items.Count == 0 || ids.Count >= int.Parse(result.GetAttribute("totalDesigns"));
                if (pageParam == null || done) break;
                page++;
            }
        }
        // The items your legacy call returned.
        foreach (var id in ids.Skip(${f.skip})${f.take === null ? '' : `.Take(${f.take})`}) Console.WriteLine("item " + id);
        Console.WriteLine("total " + result.GetAttribute("totalDesigns"));
    }
}
`;
}

function java(f: Filled): string {
  const end = f.take === null ? 'ids.size()' : `Math.min(${f.skip + f.take}, ids.size())`;
  return `// The .cp request(s) that replace your legacy call (Java 11 or later: java Replacement.java).
// Set CP_APP_KEY to your appKey.
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public class Replacement {
    public static void main(String[] args) throws Exception {
        String appKey = System.getenv().getOrDefault("CP_APP_KEY", "YOUR_APP_KEY");
        String base = ${cString(f.base)};
        String pageParam = ${f.pageParam === null ? 'null' : cString(f.pageParam)};
        int page = ${f.page};
        Integer pages = ${orNone(f.pages, 'null')}; // null: every page, until the total
        List<String> ids = new ArrayList<>();
        int fetched = 0;
        HttpClient http = HttpClient.newHttpClient();
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        Element result;
        while (true) {
            String url = base + "&appKey=" + URLEncoder.encode(appKey, StandardCharsets.UTF_8)
                + (pageParam == null ? "" : "&" + pageParam + "=" + page);
            HttpRequest request = HttpRequest.newBuilder(URI.create(url)).build();
            HttpResponse<byte[]> response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
            if (response.statusCode() != 200) throw new IllegalStateException("HTTP " + response.statusCode());
            result = factory.newDocumentBuilder().parse(new ByteArrayInputStream(response.body())).getDocumentElement();
            NodeList items = result.getElementsByTagName("searchResultItem");
            for (int i = 0; i < items.getLength(); i++) ids.add(((Element) items.item(i)).getAttribute("mediaId"));
            fetched++;
            boolean done = pages != null
                ? fetched >= pages
                : items.getLength() == 0 || ids.size() >= Integer.parseInt(result.getAttribute("totalDesigns"));
            if (pageParam == null || done) break;
            page++;
        }
        // The items your legacy call returned.
        for (String id : ids.subList(Math.min(${f.skip}, ids.size()), ${end})) System.out.println("item " + id);
        System.out.println("total " + result.getAttribute("totalDesigns"));
    }
}
`;
}

function perl(f: Filled): string {
  return `# The .cp request(s) that replace your legacy call (HTTP::Tiny, XML::LibXML). Set CP_APP_KEY to your appKey.
use strict;
use warnings;
use HTTP::Tiny;
use XML::LibXML;

my $app_key = $ENV{CP_APP_KEY} // 'YOUR_APP_KEY';
(my $key = $app_key) =~ s/([^A-Za-z0-9\\-._~])/sprintf('%%%02X', ord($1))/ge;
my $base = ${singleQuoted(f.base)};
my $page_param = ${f.pageParam === null ? 'undef' : singleQuoted(f.pageParam)};
my $page = ${f.page};
my $pages = ${orNone(f.pages, 'undef')}; # undef: every page, until the total
my (@ids, $result);
my $fetched = 0;
while (1) {
    my $url = "$base&appKey=$key" . (defined $page_param ? "&$page_param=$page" : '');
    my $response = HTTP::Tiny->new->get($url);
    die "HTTP $response->{status}\\n" unless $response->{success};
    $result = XML::LibXML->load_xml(string => $response->{content}, no_network => 1)->documentElement;
    my @items = $result->findnodes('./mainResults/searchResultItem');
    push @ids, map { $_->getAttribute('mediaId') } @items;
    $fetched++;
    my $done = defined $pages ? $fetched >= $pages : (!@items || @ids >= $result->getAttribute('totalDesigns'));
    last if !defined $page_param || $done;
    $page++;
}
# The items your legacy call returned.
print "item $ids[$_]\\n" for grep { $_ <= $#ids } ${f.skip} .. ${f.take === null ? '$#ids' : f.skip + f.take - 1};
print 'total ', $result->getAttribute('totalDesigns'), "\\n";
`;
}

function javascript(f: Filled): string {
  return `// The .cp request(s) that replace your legacy call (Node.js 18 or later; npm install fast-xml-parser).
// Set CP_APP_KEY to your appKey.
const { XMLParser } = require('fast-xml-parser');

const appKey = process.env.CP_APP_KEY ?? 'YOUR_APP_KEY';
const base = ${cString(f.base)};
const pageParam = ${f.pageParam === null ? 'null' : cString(f.pageParam)};
let page = ${f.page};
const pages = ${orNone(f.pages, 'null')}; // null: every page, until the total

(async () => {
  const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', processEntities: false });
  const ids = [];
  let fetched = 0;
  let result;
  for (;;) {
    const url = \`\${base}&appKey=\${encodeURIComponent(appKey)}\` + (pageParam === null ? '' : \`&\${pageParam}=\${page}\`);
    const response = await fetch(url);
    if (!response.ok) throw new Error(\`HTTP \${response.status}\`);
    result = parser.parse(await response.text()).searchResultSet;
    const items = [result.mainResults?.searchResultItem ?? []].flat();
    ids.push(...items.map((item) => item.mediaId));
    fetched++;
    const done = pages !== null ? fetched >= pages : items.length === 0 || ids.length >= Number(result.totalDesigns);
    if (pageParam === null || done) break;
    page++;
  }
  // The items your legacy call returned.
  for (const id of ids.slice(${f.skip}${f.take === null ? '' : `, ${f.skip + f.take}`})) console.log(\`item \${id}\`);
  console.log(\`total \${result.totalDesigns}\`);
})();
`;
}

function curl(f: Filled): string {
  const request = `curl -fsS --get ${shellQuoted(f.base)} --data-urlencode "appKey=$app_key"`;
  const pageData = f.pageParam === null ? '' : ` --data ${shellQuoted(`${f.pageParam}=`)}"$page"`;
  const keep = f.take === null ? "'NR > skip'" : `-v take=${f.take} 'NR > skip && NR <= skip + take'`;
  const stop =
    f.pageParam === null
      ? 'break'
      : f.pages === null
        ? 'if [ "$count" -eq 0 ] || [ "$seen" -ge "$total" ]; then break; fi'
        : `[ "$fetched" -ge ${f.pages} ] && break`;
  return `#!/bin/sh
# The .cp request(s) that replace your legacy call. Set CP_APP_KEY to your appKey.
app_key="\${CP_APP_KEY:-YOUR_APP_KEY}"
page=${f.page}
fetched=0
ids=''
while :; do
  body=$(${request}${pageData}) || exit 1
  items=$(printf '%s\\n' "$body" | grep -o ' mediaId="[^"]*"' | sed 's/ mediaId="\\(.*\\)"/\\1/')
  count=$(printf '%s' "$items" | grep -c .)
  total=$(printf '%s\\n' "$body" | grep -o 'totalDesigns="[0-9]*"' | head -n 1 | tr -dc 0-9)
  [ "$count" -gt 0 ] && ids="$ids$items
"
  fetched=$((fetched + 1))
  seen=$(printf '%s' "$ids" | grep -c .)
  ${stop}
  page=$((page + 1))
done
# The items your legacy call returned.
printf '%s' "$ids" | awk -v skip=${f.skip} ${keep} | sed 's/^/item /'
echo "total $total"
`;
}

/** The URL of each page a paged request's `pages` are, from its own on; for every page until the total, its first. */
export function pageUrls(request: SnippetRequest): string[] {
  const { base, pageParam, page, pages } = filled(request);
  if (pageParam === null || pages === null) return [request.url];
  return Array.from({ length: Math.min(pages, MAX_LISTED_PAGES) }, (_, i) => `${base}&${pageParam}=${page + i}`);
}
