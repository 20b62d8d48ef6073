<?php
// Calls the service through PHP's SoapClient, built from the WSDL (see test/other-clients.test.ts).
//
// usage: php php_client.php WSDL_URL 1.1|1.2 CALLS_JSON
// CALLS_JSON: [{"operation": "Search", "args": {"query": "dog"}}, ...]
//
// Prints one JSON document: per call, the request SoapClient sent (headers, body), the raw response
// (headers, body), {Op}Result as SoapClient exposes it (an <s:any /> mixed result is an object whose
// `any` property holds the content as an XML string), or the SoapFault it threw (faultcode, faultstring).

[, $wsdl, $version, $callsJson] = $argv;
$client = new SoapClient($wsdl, [
    'soap_version' => $version === '1.2' ? SOAP_1_2 : SOAP_1_1,
    'trace' => true,
    'exceptions' => true,
    'cache_wsdl' => WSDL_CACHE_NONE,
]);

/** "Name: value" lines (after the request/status line) as lower-case name => value. */
function headers(?string $raw): array {
    $headers = [];
    foreach (array_slice(preg_split('/\r?\n/', trim($raw ?? '')), 1) as $line) {
        [$name, $value] = array_map('trim', explode(':', $line, 2)) + [1 => ''];
        $headers[strtolower($name)] = $value;
    }
    return $headers;
}

$out = ['client' => 'PHP SoapClient ' . PHP_VERSION, 'soapVersion' => $version, 'calls' => []];
foreach (json_decode($callsJson, true, 512, JSON_THROW_ON_ERROR) as $call) {
    $op = $call['operation'];
    $record = ['operation' => $op, 'args' => (object) $call['args']];
    try {
        $response = $client->__soapCall($op, [$call['args']]);
        $result = $response->{"{$op}Result"} ?? null;
        $record['resultType'] = is_object($result) ? 'object{' . implode(',', array_keys(get_object_vars($result))) . '}' : gettype($result);
        $record['result'] = $result->any ?? null;
    } catch (SoapFault $fault) {
        $record['fault'] = ['code' => $fault->faultcode, 'message' => $fault->faultstring];
    }
    $record['request'] = ['headers' => headers($client->__getLastRequestHeaders()), 'body' => $client->__getLastRequest()];
    $responseHeaders = $client->__getLastResponseHeaders();
    $record['response'] = [
        'status' => preg_match('#^HTTP/\S+ (\d+)#', $responseHeaders ?? '', $m) ? (int) $m[1] : null,
        'headers' => headers($responseHeaders),
        'body' => $client->__getLastResponse(),
    ];
    $out['calls'][] = $record;
}
echo json_encode($out, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
