import type { ClientStackName } from '../clients/stack.js';
import type { OperationSpec, PagedTarget } from '../operations.js';

/**
 * Code that replaces a legacy call, in the language of the caller's stack (docs/migration.md, "Code
 * in the caller's own language"): it makes the `.cp` request(s) that replace one of the caller's own
 * calls (its parameters, its paging) and prints what the legacy result gave, one `item <mediaId>` line
 * per item and `total <totalDesigns>`. The key is read from CP_APP_KEY, `YOUR_APP_KEY` otherwise: never
 * a real one. Every template is run against the demo upstream in test/snippets.test.ts.
 */

export const SNIPPET_LANGUAGES = ['php', 'python', 'csharp', 'java', 'perl', 'javascript', 'curl'] as const;
export type SnippetLanguage = (typeof SNIPPET_LANGUAGES)[number];

/** What a snippet requests: the first request, and for a whole list, the page parameter it steps. */
export interface SnippetRequest {
  /** The first request, absolute, without its key. */
  readonly url: string;
  /** Set when the legacy call returned a whole list: every page from the URL's own is requested until the total is reached. */
  readonly pageParam: string | null;
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

/** The URL without its page parameter, and that page: where a whole list's snippet starts. */
function splitPage({ url, pageParam }: SnippetRequest): { base: string; page: number | null } {
  if (pageParam === null) return { base: url, page: null };
  // Relative when there is no base to reach the endpoints at (the demo upstream answers on the proxy's own host).
  const relative = url.startsWith('/');
  const parsed = new URL(url, 'http://relative.invalid');
  const page = Number(parsed.searchParams.get(pageParam) ?? '1');
  parsed.searchParams.delete(pageParam);
  return { base: relative ? `${parsed.pathname}${parsed.search}` : parsed.href, page: Number.isSafeInteger(page) ? page : 1 };
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
  const { base, page } = splitPage(request);
  const pageParam = request.pageParam;
  return {
    php: php(base, pageParam, page),
    python: python(base, pageParam, page),
    csharp: csharp(base, pageParam, page),
    java: java(base, pageParam, page),
    perl: perl(base, pageParam, page),
    javascript: javascript(base, pageParam, page),
    curl: curl(base, pageParam, page),
  };
}

function php(base: string, pageParam: string | null, page: number | null): string {
  return `<?php
// The .cp request(s) that replace your legacy call. Needs ext-simplexml; set CP_APP_KEY to your appKey.
$appKey = getenv('CP_APP_KEY') ?: 'YOUR_APP_KEY';
$base = ${singleQuoted(base)};
$pageParam = ${pageParam === null ? 'null' : singleQuoted(pageParam)};
$page = ${page ?? 'null'};
$seen = 0;
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
        echo "item {$item['mediaId']}\\n";
        $count++;
    }
    $seen += $count;
    if ($pageParam === null || $count === 0 || $seen >= (int) $result['totalDesigns']) {
        echo "total {$result['totalDesigns']}\\n";
        break;
    }
    $page++;
}
`;
}

function python(base: string, pageParam: string | null, page: number | null): string {
  return `# The .cp request(s) that replace your legacy call (Python 3, standard library only).
# Set CP_APP_KEY to your appKey.
import os
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

app_key = os.environ.get("CP_APP_KEY", "YOUR_APP_KEY")
base = ${cString(base)}
page_param = ${pageParam === null ? 'None' : cString(pageParam)}
page = ${page ?? 'None'}
seen = 0
while True:
    url = base + "&appKey=" + urllib.parse.quote(app_key, safe="")
    if page_param is not None:
        url += "&%s=%d" % (page_param, page)
    with urllib.request.urlopen(url) as response:
        result = ET.fromstring(response.read())
    items = result.findall("./mainResults/searchResultItem")
    for item in items:
        print("item", item.get("mediaId"))
    seen += len(items)
    if page_param is None or not items or seen >= int(result.get("totalDesigns")):
        print("total", result.get("totalDesigns"))
        break
    page += 1
`;
}

function csharp(base: string, pageParam: string | null, page: number | null): string {
  return `// The .cp request(s) that replace your legacy call (.NET Framework or Mono: mcs -r:System.Xml Replacement.cs).
// Set CP_APP_KEY to your appKey.
using System;
using System.Net;
using System.Text;
using System.Xml;

class Replacement
{
    static void Main()
    {
        var appKey = Environment.GetEnvironmentVariable("CP_APP_KEY") ?? "YOUR_APP_KEY";
        var baseUrl = ${cString(base)};
        string pageParam = ${pageParam === null ? 'null' : cString(pageParam)};
        var page = ${page ?? 0};
        var seen = 0;
        using (var web = new WebClient { Encoding = Encoding.UTF8 })
        {
            while (true)
            {
                var url = baseUrl + "&appKey=" + Uri.EscapeDataString(appKey) + (pageParam == null ? "" : "&" + pageParam + "=" + page);
                var document = new XmlDocument { XmlResolver = null };
                document.LoadXml(web.DownloadString(url));
                var result = document.DocumentElement;
                var items = result.SelectNodes("mainResults/searchResultItem");
                foreach (XmlElement item in items) Console.WriteLine("item " + item.GetAttribute("mediaId"));
                seen += items.Count;
                if (pageParam == null || items.Count == 0 || seen >= int.Parse(result.GetAttribute("totalDesigns")))
                {
                    Console.WriteLine("total " + result.GetAttribute("totalDesigns"));
                    break;
                }
                page++;
            }
        }
    }
}
`;
}

function java(base: string, pageParam: string | null, page: number | null): string {
  return `// The .cp request(s) that replace your legacy call (Java 11 or later: java Replacement.java).
// Set CP_APP_KEY to your appKey.
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public class Replacement {
    public static void main(String[] args) throws Exception {
        String appKey = System.getenv().getOrDefault("CP_APP_KEY", "YOUR_APP_KEY");
        String base = ${cString(base)};
        String pageParam = ${pageParam === null ? 'null' : cString(pageParam)};
        int page = ${page ?? 0};
        int seen = 0;
        HttpClient http = HttpClient.newHttpClient();
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        while (true) {
            String url = base + "&appKey=" + URLEncoder.encode(appKey, StandardCharsets.UTF_8)
                + (pageParam == null ? "" : "&" + pageParam + "=" + page);
            HttpRequest request = HttpRequest.newBuilder(URI.create(url)).build();
            HttpResponse<byte[]> response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
            if (response.statusCode() != 200) throw new IllegalStateException("HTTP " + response.statusCode());
            Element result = factory.newDocumentBuilder().parse(new ByteArrayInputStream(response.body())).getDocumentElement();
            NodeList items = result.getElementsByTagName("searchResultItem");
            for (int i = 0; i < items.getLength(); i++) System.out.println("item " + ((Element) items.item(i)).getAttribute("mediaId"));
            seen += items.getLength();
            if (pageParam == null || items.getLength() == 0 || seen >= Integer.parseInt(result.getAttribute("totalDesigns"))) {
                System.out.println("total " + result.getAttribute("totalDesigns"));
                break;
            }
            page++;
        }
    }
}
`;
}

function perl(base: string, pageParam: string | null, page: number | null): string {
  return `# The .cp request(s) that replace your legacy call (HTTP::Tiny, XML::LibXML). Set CP_APP_KEY to your appKey.
use strict;
use warnings;
use HTTP::Tiny;
use XML::LibXML;

my $app_key = $ENV{CP_APP_KEY} // 'YOUR_APP_KEY';
(my $key = $app_key) =~ s/([^A-Za-z0-9\\-._~])/sprintf('%%%02X', ord($1))/ge;
my $base = ${singleQuoted(base)};
my $page_param = ${pageParam === null ? 'undef' : singleQuoted(pageParam)};
my $page = ${page ?? 'undef'};
my $seen = 0;
while (1) {
    my $url = "$base&appKey=$key" . (defined $page_param ? "&$page_param=$page" : '');
    my $response = HTTP::Tiny->new->get($url);
    die "HTTP $response->{status}\\n" unless $response->{success};
    my $result = XML::LibXML->load_xml(string => $response->{content}, no_network => 1)->documentElement;
    my @items = $result->findnodes('./mainResults/searchResultItem');
    print 'item ', $_->getAttribute('mediaId'), "\\n" for @items;
    $seen += @items;
    if (!defined $page_param || !@items || $seen >= $result->getAttribute('totalDesigns')) {
        print 'total ', $result->getAttribute('totalDesigns'), "\\n";
        last;
    }
    $page++;
}
`;
}

function javascript(base: string, pageParam: string | null, page: number | null): string {
  return `// The .cp request(s) that replace your legacy call (Node.js 18 or later; npm install fast-xml-parser).
// Set CP_APP_KEY to your appKey.
const { XMLParser } = require('fast-xml-parser');

const appKey = process.env.CP_APP_KEY ?? 'YOUR_APP_KEY';
const base = ${cString(base)};
const pageParam = ${pageParam === null ? 'null' : cString(pageParam)};
let page = ${page ?? 'null'};

(async () => {
  const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', processEntities: false });
  let seen = 0;
  for (;;) {
    const url = \`\${base}&appKey=\${encodeURIComponent(appKey)}\` + (pageParam === null ? '' : \`&\${pageParam}=\${page}\`);
    const response = await fetch(url);
    if (!response.ok) throw new Error(\`HTTP \${response.status}\`);
    const result = parser.parse(await response.text()).searchResultSet;
    const items = [result.mainResults?.searchResultItem ?? []].flat();
    for (const item of items) console.log(\`item \${item.mediaId}\`);
    seen += items.length;
    if (pageParam === null || items.length === 0 || seen >= Number(result.totalDesigns)) {
      console.log(\`total \${result.totalDesigns}\`);
      break;
    }
    page++;
  }
})();
`;
}

function curl(base: string, pageParam: string | null, page: number | null): string {
  const request = `curl -fsS --get ${shellQuoted(base)} --data-urlencode "appKey=$app_key"`;
  const ids = `grep -o ' mediaId="[^"]*"' | sed 's/ mediaId="\\(.*\\)"/item \\1/'`;
  const total = `grep -o 'totalDesigns="[0-9]*"' | head -n 1 | tr -dc 0-9`;
  if (pageParam === null) {
    return `#!/bin/sh
# The .cp request that replaces your legacy call. Set CP_APP_KEY to your appKey.
app_key="\${CP_APP_KEY:-YOUR_APP_KEY}"
body=$(${request}) || exit 1
printf '%s\\n' "$body" | ${ids}
echo "total $(printf '%s\\n' "$body" | ${total})"
`;
  }
  return `#!/bin/sh
# The .cp requests that replace your legacy call: every page, until the total. Set CP_APP_KEY to your appKey.
app_key="\${CP_APP_KEY:-YOUR_APP_KEY}"
page=${page}
seen=0
while :; do
  body=$(${request} --data ${shellQuoted(`${pageParam}=`)}"$page") || exit 1
  items=$(printf '%s\\n' "$body" | ${ids})
  count=$(printf '%s' "$items" | grep -c .)
  total=$(printf '%s\\n' "$body" | ${total})
  [ "$count" -gt 0 ] && printf '%s\\n' "$items"
  seen=$((seen + count))
  if [ "$count" -eq 0 ] || [ "$seen" -ge "$total" ]; then
    echo "total $total"
    break
  fi
  page=$((page + 1))
done
`;
}
