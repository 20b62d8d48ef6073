"""Calls the service through Python zeep, a WSDL-driven SOAP client (see test/other-clients.test.ts).

usage: zeep_client.py WSDL_URL 1.1|1.2 CALLS_JSON
CALLS_JSON: [{"operation": "Search", "args": {"query": "dog"}}, ...]

Prints one JSON document: per call, the request zeep sent (headers, body), the raw response
(status, headers, body), the {Op}Result as zeep hands it back serialized to XML, or the fault as
zeep raises it (zeep.exceptions.Fault: .code, .message).
"""
import json
import sys

import zeep
from lxml import etree
from zeep.transports import Transport


class RecordingTransport(Transport):
    """Keeps the last HTTP exchange exactly as it went over the wire."""

    last = None

    def post(self, address, message, headers):
        response = super().post(address, message, headers)
        self.last = response
        return response


def to_xml(value):
    """zeep returns the <s:any /> content as lxml elements (or a value object holding them)."""
    if value is None:
        return None
    if isinstance(value, etree._Element):
        return etree.tostring(value, encoding="unicode")
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "".join(to_xml(item) or "" for item in value)
    return to_xml(getattr(value, "_value_1", None))


def main():
    wsdl, version, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    transport = RecordingTransport()
    client = zeep.Client(wsdl, transport=transport)
    # The WSDL's one service ({Svc}, CatalogService by default) has the ports {Svc}Soap and {Svc}Soap12.
    name = next(iter(client.wsdl.services))
    service = client.bind(name, name + ("Soap12" if version == "1.2" else "Soap"))
    out = {"client": f"zeep {zeep.__version__}", "soapVersion": version, "calls": []}
    for call in calls:
        record = {"operation": call["operation"], "args": call["args"]}
        transport.last = None
        try:
            result = getattr(service, call["operation"])(**call["args"])
            record["resultType"] = type(result).__name__
            record["result"] = to_xml(result)
        except zeep.exceptions.Fault as fault:
            record["fault"] = {"code": fault.code, "message": fault.message}
        except Exception as error:  # anything else the client throws is recorded, not a crash
            record["error"] = f"{type(error).__name__}: {error}"
        if transport.last is not None:
            sent = transport.last.request
            record["request"] = {
                "headers": {name.lower(): value for name, value in sent.headers.items()},
                "body": sent.body.decode("utf-8") if isinstance(sent.body, bytes) else sent.body,
            }
            record["response"] = {
                "status": transport.last.status_code,
                "headers": {name.lower(): value for name, value in transport.last.headers.items()},
                "body": transport.last.content.decode("utf-8"),
            }
        out["calls"].append(record)
    json.dump(out, sys.stdout)


main()
