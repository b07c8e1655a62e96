// What both variants share: the limits of a request, the order hotpath checks them in, the RFC 9457 answers of its
// router, and the JSON checks System.Text.Json's reader leaves to GetString().
using System.Text.Unicode;

namespace Freight;

static class Limits
{
    // hotpath's apps/freight/cart.hpp: a larger body or cart is a 400 naming the field.
    public const int MaxBodyBytes = 8192;
    public const int MaxItems = 50;
    public const long MaxQuantity = 1000;
    public const long MaxItemGrams = 100_000;
    public const int MaxSkuBytes = 64;
    // Boost.JSON's default nesting limit, which hotpath's reader keeps: 32 containers deep, not 33.
    public const int MaxJsonDepth = 32;
}

static class Problems
{
    public const string QuotePath = "/freight/quote";

    // hotpath matches paths exactly, and a trailing slash as none; ASP.NET Core's routing ignores case.
    public static bool IsQuotePath(PathString path) => path.Value is QuotePath or QuotePath + "/";

    // The answers of hotpath's router: 405 with Allow on the quote's path, 404 elsewhere.
    public static Task NoRouteAsync(HttpContext context)
    {
        if (IsQuotePath(context.Request.Path))
        {
            context.Response.Headers.Allow = "POST";
            return WriteAsync(context, StatusCodes.Status405MethodNotAllowed, "the route does not accept this method");
        }
        return WriteAsync(context, StatusCodes.Status404NotFound, "no route matches the request path");
    }

    // {"type":"about:blank","title":<reason phrase>,"status":<status>,"detail":<detail>} as application/problem+json.
    public static Task WriteAsync(HttpContext context, int status, string detail)
    {
        context.Response.StatusCode = status;
        context.Response.ContentType = "application/problem+json";
        return WriteTextAsync(context,
            $"{{\"type\":\"about:blank\",\"title\":\"{ReasonPhrase(status)}\",\"status\":{status},\"detail\":\"{detail}\"}}");
    }

    // The whole body with its Content-Length, as hotpath sends it (Kestrel would otherwise send it chunked).
    public static Task WriteTextAsync(HttpContext context, string text)
    {
        var bytes = System.Text.Encoding.UTF8.GetBytes(text);
        context.Response.ContentLength = bytes.Length;
        return context.Response.Body.WriteAsync(bytes, 0, bytes.Length);
    }

    public static string ReasonPhrase(int status) => status switch
    {
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => Microsoft.AspNetCore.WebUtilities.ReasonPhrases.GetReasonPhrase(status),
    };
}

static class Rfc8259
{
    // True when the body is UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF) and every
    // \u escape of a surrogate is a high one followed by a low one. Boost.JSON's parser refuses both; the reader of
    // System.Text.Json only throws once such a string is read as a .NET string. Meaningful for a body the reader
    // found well formed: a backslash there only ever starts an escape inside a string.
    public static bool StringsAreValid(ReadOnlySpan<byte> json)
    {
        if (!Utf8.IsValid(json))
        {
            return false;
        }
        int at = 0;
        while (true)
        {
            int slash = json[at..].IndexOf((byte)'\\');
            if (slash < 0)
            {
                return true;
            }
            at += slash;
            if (at + 1 >= json.Length)
            {
                return true; // not JSON: the reader says so
            }
            if (json[at + 1] != (byte)'u')
            {
                at += 2;
                continue;
            }
            if (!Hex4(json, at + 2, out int unit))
            {
                return true;
            }
            at += 6;
            if (unit is >= 0xDC00 and <= 0xDFFF)
            {
                return false; // a low surrogate first
            }
            if (unit is >= 0xD800 and <= 0xDBFF)
            {
                if (at + 1 >= json.Length || json[at] != (byte)'\\' || json[at + 1] != (byte)'u' ||
                    !Hex4(json, at + 2, out int low) || low is < 0xDC00 or > 0xDFFF)
                {
                    return false;
                }
                at += 6;
            }
        }
    }

    // The length in bytes of a string token's text once its escapes are decoded (valid escapes: see above).
    public static int DecodedLength(ReadOnlySpan<byte> raw)
    {
        int length = 0;
        for (int i = 0; i < raw.Length;)
        {
            if (raw[i] != (byte)'\\')
            {
                ++length;
                ++i;
                continue;
            }
            if (raw[i + 1] != (byte)'u')
            {
                ++length;
                i += 2;
                continue;
            }
            Hex4(raw, i + 2, out int unit);
            i += 6;
            if (unit is >= 0xD800 and <= 0xDBFF)
            {
                length += 4;
                i += 6; // its low surrogate
            }
            else
            {
                length += unit < 0x80 ? 1 : unit < 0x800 ? 2 : 3;
            }
        }
        return length;
    }

    static bool Hex4(ReadOnlySpan<byte> s, int from, out int value)
    {
        value = 0;
        if (from + 4 > s.Length)
        {
            return false;
        }
        for (int i = from; i < from + 4; ++i)
        {
            int digit = s[i] switch
            {
                >= (byte)'0' and <= (byte)'9' => s[i] - '0',
                >= (byte)'a' and <= (byte)'f' => s[i] - 'a' + 10,
                >= (byte)'A' and <= (byte)'F' => s[i] - 'A' + 10,
                _ => -1,
            };
            if (digit < 0)
            {
                return false;
            }
            value = value * 16 + digit;
        }
        return true;
    }
}
