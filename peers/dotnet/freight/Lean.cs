// The fix: the cart read in place from the request's bytes (a Utf8JsonReader, a ref struct), the table in struct
// arrays, the answer formatted as UTF-8 into a pooled buffer: no object of its own per request, by design (ASP.NET
// Core still allocates its own, about 230 bytes a request; bench/RESULTS.md has what the process measured).
using System.Buffers;
using System.IO.Pipelines;
using System.Text.Json;
using System.Text.Unicode;

namespace Freight;

static class Lean
{
    // The first thing wrong with a request, in hotpath's order: the body, then cep, then items, then each item's
    // fields in index order (sku, quantity, weightGrams).
    enum CartError : byte { None, BodyJson, BodyObject, Cep, Items, Item, Sku, Quantity, Weight }

    enum Field : byte { None, Cep, Items, Sku, Quantity, Weight }

    static readonly JsonReaderOptions ReaderOptions = new() { MaxDepth = Limits.MaxJsonDepth };

    public static async Task QuoteAsync(HttpContext context, FreightTable table)
    {
        if (!Problems.IsQuotePath(context.Request.Path))
        {
            await Problems.WriteAsync(context, StatusCodes.Status404NotFound, "no route matches the request path");
            return;
        }
        PipeReader body = context.Request.BodyReader;
        ReadResult read;
        while (true)
        {
            read = await body.ReadAsync();
            if (read.IsCompleted || read.Buffer.Length > Limits.MaxBodyBytes)
            {
                break;
            }
            body.AdvanceTo(read.Buffer.Start, read.Buffer.End); // all of it seen, none of it consumed: read more
        }
        byte[] output = ArrayPool<byte>.Shared.Rent(512);
        int status;
        int length;
        try
        {
            length = Answer(read.Buffer, table, output, out status);
        }
        finally
        {
            body.AdvanceTo(read.Buffer.End);
        }
        HttpResponse response = context.Response;
        response.StatusCode = status;
        response.ContentType = status == StatusCodes.Status200OK ? "application/json" : "application/problem+json";
        response.ContentLength = length;
        await response.Body.WriteAsync(output.AsMemory(0, length));
        ArrayPool<byte>.Shared.Return(output);
    }

    // Writes the answer to `body` into `output` and returns its length.
    static int Answer(in ReadOnlySequence<byte> body, FreightTable table, Span<byte> output, out int status)
    {
        status = StatusCodes.Status400BadRequest;
        if (body.Length > Limits.MaxBodyBytes)
        {
            return WriteProblem(output, status, $"body: larger than {Limits.MaxBodyBytes} bytes");
        }
        // Kestrel hands a small body over in one segment; a body split across its buffers is copied to the stack.
        Span<byte> copy = body.IsSingleSegment ? default : stackalloc byte[Limits.MaxBodyBytes];
        ReadOnlySpan<byte> json = body.IsSingleSegment ? body.FirstSpan : copy[..(int)body.Length];
        if (!body.IsSingleSegment)
        {
            body.CopyTo(copy);
        }

        var error = ReadCart(json, out uint cep, out ulong grams, out int item);
        switch (error)
        {
            case CartError.None:
                break;
            case CartError.BodyJson:
                return WriteProblem(output, status, $"body: not valid JSON");
            case CartError.BodyObject:
                return WriteProblem(output, status, $"body: must be a JSON object");
            case CartError.Cep:
                return WriteProblem(output, status, $"cep: must be a string of 8 digits, as 01310100 or 01310-100");
            case CartError.Items:
                return WriteProblem(output, status, $"items: must be an array of 1 to {Limits.MaxItems} items");
            case CartError.Item:
                return WriteProblem(output, status, $"items[{item}]: must be an object");
            case CartError.Sku:
                return WriteProblem(output, status,
                    $"items[{item}].sku: must be a string of 1 to {Limits.MaxSkuBytes} bytes");
            case CartError.Quantity:
                return WriteProblem(output, status,
                    $"items[{item}].quantity: must be an integer from 1 to {Limits.MaxQuantity}");
            case CartError.Weight:
                return WriteProblem(output, status,
                    $"items[{item}].weightGrams: must be an integer from 1 to {Limits.MaxItemGrams}");
        }

        var quote = table.Lookup(cep, grams);
        int written;
        switch (quote.Outcome)
        {
            case Outcome.UnknownCep:
                status = StatusCodes.Status404NotFound;
                return WriteProblem(output, status, $"no freight range covers CEP {cep / 1000:D5}-{cep % 1000:D3}");
            case Outcome.TooHeavy:
                return WriteProblem(output, status,
                    $"items: total weight {grams} g is over the heaviest bracket for CEP {cep / 1000:D5}-{cep % 1000:D3} ({quote.MaxGrams} g)");
        }
        status = StatusCodes.Status200OK;
        Utf8.TryWrite(output,
            $"{{\"cep\":\"{cep / 1000:D5}-{cep % 1000:D3}\",\"state\":\"{quote.State}\",\"totalWeightGrams\":{grams},\"bracket\":{{\"minGrams\":{quote.MinGrams},\"maxGrams\":{quote.MaxGrams}}},\"priceCents\":{quote.PriceCents},\"deliveryDays\":{quote.DeliveryDays}}}",
            out written);
        return written;
    }

    // An RFC 9457 problem as hotpath writes it, its detail formatted straight into `output`.
    static int WriteProblem(Span<byte> output, int status,
        [System.Runtime.CompilerServices.InterpolatedStringHandlerArgument("output")]
        ref ProblemDetail detail)
    {
        return detail.Finish(output, status);
    }

    // Reads `json` ({"cep": "01310-100", "items": [{"sku": "...", "quantity": 2, "weightGrams": 350}, ...]}, other
    // members ignored, the last of duplicate members counting) in one pass of a Utf8JsonReader: the cart's CEP and
    // total weight, or the first thing wrong with it and, for an item, its index.
    static CartError ReadCart(ReadOnlySpan<byte> json, out uint cep, out ulong totalGrams, out int errorItem)
    {
        cep = 0;
        totalGrams = 0;
        errorItem = 0;
        if (!Rfc8259.StringsAreValid(json))
        {
            return CartError.BodyJson;
        }
        bool isObject = false, cepSeen = false, cepOk = false, itemsSeen = false, itemsArray = false;
        bool inItems = false, inItem = false, skuOk = false;
        int count = 0, item = 0;
        long quantity = 0, weight = 0; // 0 stands for "not an integer in range" too: the ranges start at 1
        var itemError = CartError.None;
        var pending = Field.None; // the member whose value comes next
        Span<byte> text = stackalloc byte[64];
        var reader = new Utf8JsonReader(json, ReaderOptions);
        try
        {
            while (reader.Read())
            {
                JsonTokenType token = reader.TokenType;
                int depth = reader.CurrentDepth;
                if (depth == 0)
                {
                    isObject = token is JsonTokenType.StartObject or JsonTokenType.EndObject;
                    continue;
                }
                if (!isObject)
                {
                    continue; // only checked for being JSON
                }
                if (token == JsonTokenType.PropertyName)
                {
                    pending = depth == 1
                        ? reader.ValueTextEquals("cep"u8) ? Field.Cep
                        : reader.ValueTextEquals("items"u8) ? Field.Items : Field.None
                        : inItem && depth == 3
                            ? reader.ValueTextEquals("sku"u8) ? Field.Sku
                            : reader.ValueTextEquals("quantity"u8) ? Field.Quantity
                            : reader.ValueTextEquals("weightGrams"u8) ? Field.Weight : Field.None
                            : Field.None;
                    continue;
                }
                if (token is JsonTokenType.EndObject or JsonTokenType.EndArray)
                {
                    if (inItem && depth == 2)
                    {
                        inItem = false;
                        if (itemError != CartError.None)
                        {
                            continue;
                        }
                        if (!skuOk)
                        {
                            (itemError, errorItem) = (CartError.Sku, item);
                        }
                        else if (quantity is < 1 or > Limits.MaxQuantity)
                        {
                            (itemError, errorItem) = (CartError.Quantity, item);
                        }
                        else if (weight is < 1 or > Limits.MaxItemGrams)
                        {
                            (itemError, errorItem) = (CartError.Weight, item);
                        }
                        else
                        {
                            totalGrams += (ulong)(quantity * weight);
                        }
                    }
                    else if (inItems && depth == 1)
                    {
                        inItems = false;
                    }
                    continue;
                }
                // The first token of a value.
                if (pending != Field.None)
                {
                    switch (pending)
                    {
                        case Field.Cep:
                            cepSeen = true;
                            cepOk = token == JsonTokenType.String && reader.ValueSpan.Length <= text.Length &&
                                    ParseCep(text[..reader.CopyString(text)], ref cep);
                            break;
                        case Field.Items: // the last "items" counts
                            itemsSeen = true;
                            itemsArray = inItems = token == JsonTokenType.StartArray;
                            count = 0;
                            itemError = CartError.None;
                            errorItem = 0;
                            totalGrams = 0;
                            break;
                        case Field.Sku:
                            skuOk = token == JsonTokenType.String &&
                                    (reader.ValueIsEscaped ? Rfc8259.DecodedLength(reader.ValueSpan)
                                        : reader.ValueSpan.Length) is >= 1 and <= Limits.MaxSkuBytes;
                            break;
                        case Field.Quantity:
                            quantity = token == JsonTokenType.Number && reader.TryGetInt64(out long q) ? q : 0;
                            break;
                        case Field.Weight:
                            weight = token == JsonTokenType.Number && reader.TryGetInt64(out long w) ? w : 0;
                            break;
                    }
                    pending = Field.None;
                    continue;
                }
                if (inItems && depth == 2) // an element of items
                {
                    int index = count++;
                    if (token == JsonTokenType.StartObject)
                    {
                        (inItem, item, skuOk, quantity, weight) = (true, index, false, 0, 0);
                    }
                    else if (itemError == CartError.None)
                    {
                        (itemError, errorItem) = (CartError.Item, index);
                    }
                }
            }
        }
        catch (JsonException)
        {
            return CartError.BodyJson;
        }
        if (reader.BytesConsumed == 0)
        {
            return CartError.BodyJson; // nothing but whitespace
        }
        if (!isObject)
        {
            return CartError.BodyObject;
        }
        if (!cepSeen || !cepOk)
        {
            return CartError.Cep;
        }
        if (!itemsSeen || !itemsArray || count is 0 or > Limits.MaxItems)
        {
            return CartError.Items;
        }
        return itemError;
    }

    // Exactly 8 digits, or 5 digits, '-', 3 digits.
    static bool ParseCep(ReadOnlySpan<byte> text, ref uint cep)
    {
        if (text.Length == 9 ? text[5] != (byte)'-' : text.Length != 8)
        {
            return false;
        }
        uint value = 0;
        for (int i = 0; i < text.Length; ++i)
        {
            if (text.Length == 9 && i == 5)
            {
                continue;
            }
            if (text[i] is < (byte)'0' or > (byte)'9')
            {
                return false;
            }
            value = value * 10 + (uint)(text[i] - '0');
        }
        cep = value;
        return true;
    }
}

// Formats a problem's detail as UTF-8 after the problem's opening, in place: an interpolated string handler that
// writes each part where it goes, so that a detail with numbers in it costs no string.
[System.Runtime.CompilerServices.InterpolatedStringHandler]
ref struct ProblemDetail
{
    const int DetailAt = 128; // the opening is shorter; the detail is moved down to it once its length is known
    readonly Span<byte> output;
    int written;
    bool failed;

    public ProblemDetail(int literalLength, int formattedCount, Span<byte> output)
    {
        this.output = output;
        written = 0;
        failed = false;
    }

    public void AppendLiteral(string s) => Append(s.AsSpan());

    public void AppendFormatted<T>(T value, string? format = null) where T : IUtf8SpanFormattable
    {
        if (!failed && value.TryFormat(output[(DetailAt + written)..], out int n, format, null))
        {
            written += n;
        }
        else
        {
            failed = true;
        }
    }

    void Append(ReadOnlySpan<char> s)
    {
        if (!failed && Utf8.FromUtf16(s, output[(DetailAt + written)..], out _, out int n) == OperationStatus.Done)
        {
            written += n;
        }
        else
        {
            failed = true;
        }
    }

    // {"type":"about:blank","title":...,"status":...,"detail":"<detail>"}; its length.
    public int Finish(Span<byte> output, int status)
    {
        Utf8.TryWrite(output,
            $"{{\"type\":\"about:blank\",\"title\":\"{Problems.ReasonPhrase(status)}\",\"status\":{status},\"detail\":\"",
            out int head);
        output.Slice(DetailAt, written).CopyTo(output[head..]);
        "\"}"u8.CopyTo(output[(head + written)..]);
        return head + written + 2;
    }
}
