// A generic driver for the SoapHttpClientProtocol proxy that Mono's `wsdl` generates from the served
// `?WSDL` (class CatalogService, SOAP 1.1 or, with -protocol:SOAP12, SOAP 1.2). Compiled together with
// the generated CatalogService.cs by test/dotnet-client.test.ts:
//
//   mcs -nologo -r:System.Web.Services -r:System.Xml -out:client.exe CatalogService.cs Main.cs
//   mono client.exe URL CALL...
//
// URL is the service address (it replaces the one baked in from the WSDL). Each CALL is one argument
// `Op|arg1|arg2|...` with the web method's parameters in order; an empty field is null, `int`
// parameters are parsed. An argument `url=URL` switches the address for the calls after it.
//
// For every call one line of JSON goes to stdout:
//   {"op":"Search","soapVersion":"Soap11","request":{...},"response":{...},"result":"<searchResultSet ...>"}
//   {"op":"AdvancedSearch",...,"fault":{"code":{"name":"Client","ns":"http://..."},"subcode":null,"message":"..."}}
//   {"op":"...",...,"error":{"type":"System.Net.WebException","message":"..."}}
// `result` is the returned XmlNode's OuterXml (null for a null node); `request` holds the Content-Type
// and SOAPAction header the proxy sent, `response` the HTTP status and Content-Type it got back.

using System;
using System.Globalization;
using System.Net;
using System.Reflection;
using System.Text;
using System.Web.Services.Protocols;
using System.Xml;

// Hooks into the generated (partial) proxy class to see the HTTP exchange of the last call.
public partial class CatalogService {
    public HttpWebRequest LastRequest;
    public HttpWebResponse LastResponse;

    protected override WebRequest GetWebRequest(Uri uri) {
        WebRequest request = base.GetWebRequest(uri);
        LastRequest = request as HttpWebRequest;
        return request;
    }

    protected override WebResponse GetWebResponse(WebRequest request) {
        WebResponse response = base.GetWebResponse(request);
        LastResponse = response as HttpWebResponse;
        return response;
    }
}

public static class Driver {
    public static int Main(string[] args) {
        if (args.Length < 1) {
            Console.Error.WriteLine("usage: client.exe URL [Op|arg1|arg2|...] [url=URL] ...");
            return 2;
        }
        Console.OutputEncoding = new UTF8Encoding(false);
        string url = args[0];
        for (int i = 1; i < args.Length; i++) {
            if (args[i].StartsWith("url=", StringComparison.Ordinal)) {
                url = args[i].Substring(4);
                continue;
            }
            Console.WriteLine(RunCall(url, args[i]));
        }
        return 0;
    }

    static string RunCall(string url, string spec) {
        string[] fields = spec.Split('|');
        string op = fields[0];
        CatalogService service = new CatalogService();
        service.Url = url;
        service.Timeout = 30000;
        StringBuilder json = new StringBuilder();
        json.Append("{\"op\":").Append(Str(op));
        json.Append(",\"soapVersion\":").Append(Str(service.SoapVersion.ToString()));
        string outcome;
        try {
            MethodInfo method = typeof(CatalogService).GetMethod(op, BindingFlags.Public | BindingFlags.Instance | BindingFlags.DeclaredOnly);
            if (method == null) throw new ArgumentException("no web method " + op);
            ParameterInfo[] parameters = method.GetParameters();
            if (parameters.Length != fields.Length - 1) {
                throw new ArgumentException(op + " takes " + parameters.Length + " arguments, got " + (fields.Length - 1));
            }
            object[] values = new object[parameters.Length];
            for (int p = 0; p < parameters.Length; p++) {
                string field = fields[p + 1];
                if (parameters[p].ParameterType == typeof(int)) {
                    values[p] = int.Parse(field, NumberStyles.Integer, CultureInfo.InvariantCulture);
                } else {
                    values[p] = field.Length == 0 ? null : field;
                }
            }
            object result;
            try {
                result = method.Invoke(service, values);
            } catch (TargetInvocationException e) {
                throw e.InnerException;
            }
            XmlNode node = result as XmlNode;
            outcome = ",\"resultType\":" + Str(result == null ? null : result.GetType().FullName)
                + ",\"result\":" + Str(node == null ? null : node.OuterXml);
        } catch (SoapException e) {
            outcome = ",\"fault\":{\"code\":" + QName(e.Code)
                + ",\"subcode\":" + (e.SubCode == null ? "null" : QName(e.SubCode.Code))
                + ",\"message\":" + Str(e.Message) + "}";
        } catch (Exception e) {
            outcome = ",\"error\":{\"type\":" + Str(e.GetType().FullName) + ",\"message\":" + Str(e.Message)
                + (e is WebException ? ",\"status\":" + Str(((WebException) e).Status.ToString()) : "") + "}";
        }
        HttpWebRequest request = service.LastRequest;
        if (request != null) {
            json.Append(",\"request\":{\"contentType\":").Append(Str(request.ContentType))
                .Append(",\"soapAction\":").Append(Str(request.Headers["SOAPAction"])).Append('}');
        }
        HttpWebResponse response = service.LastResponse;
        if (response != null) {
            json.Append(",\"response\":{\"status\":").Append((int) response.StatusCode)
                .Append(",\"contentType\":").Append(Str(response.ContentType)).Append('}');
        }
        return json.Append(outcome).Append('}').ToString();
    }

    static string QName(XmlQualifiedName name) {
        if (name == null) return "null";
        return "{\"name\":" + Str(name.Name) + ",\"ns\":" + Str(name.Namespace) + "}";
    }

    /// A JSON string literal; everything outside printable ASCII as \uXXXX.
    static string Str(string value) {
        if (value == null) return "null";
        StringBuilder sb = new StringBuilder(value.Length + 2);
        sb.Append('"');
        foreach (char c in value) {
            switch (c) {
                case '"': sb.Append("\\\""); break;
                case '\\': sb.Append("\\\\"); break;
                case '\n': sb.Append("\\n"); break;
                case '\r': sb.Append("\\r"); break;
                case '\t': sb.Append("\\t"); break;
                default:
                    if (c < 0x20 || c > 0x7e) sb.Append("\\u").Append(((int) c).ToString("x4"));
                    else sb.Append(c);
                    break;
            }
        }
        return sb.Append('"').ToString();
    }
}
