// THE ANTI-PATTERN, written the way the write-up's original was: the body read into a MemoryStream and an array, a
// DOM, the cart mapped onto small classes in a List<T>, the weight summed with LINQ, a connection, a command and a
// reader per request for the price rows (classes again, in another List<T>), a LINQ search over them, and the
// answer built as an object and serialised to a new string. Each step allocates; under load the garbage collector
// pays for all of it. Do not copy: Lean.cs is the fix.
using System.Text;
using System.Text.Json;
using System.Text.RegularExpressions;
using Microsoft.Data.Sqlite;

namespace Freight;

sealed class CartItem
{
    public string Sku { get; set; } = "";
    public long Quantity { get; set; }
    public long WeightGrams { get; set; }
}

sealed class PriceRow
{
    public string Uf { get; set; } = "";
    public long MinGrams { get; set; }
    public long MaxGrams { get; set; }
    public long PriceCents { get; set; }
    public long DeliveryDays { get; set; }
}

sealed class BracketAnswer
{
    public long MinGrams { get; set; }
    public long MaxGrams { get; set; }
}

sealed class QuoteAnswer
{
    public string Cep { get; set; } = "";
    public string State { get; set; } = "";
    public ulong TotalWeightGrams { get; set; }
    public BracketAnswer Bracket { get; set; } = new();
    public long PriceCents { get; set; }
    public long DeliveryDays { get; set; }
}

// Thrown for a 400 or 404 with its detail, and caught once, as such code usually does it.
sealed class QuoteRefused(int status, string detail) : Exception(detail)
{
    public int Status { get; } = status;
}

static partial class Churn
{
    static readonly JsonSerializerOptions Web = new(JsonSerializerDefaults.Web);

    [GeneratedRegex("^[0-9]{5}-?[0-9]{3}\\z")]
    private static partial Regex CepPattern();

    public static async Task QuoteAsync(HttpContext context, string connectionString)
    {
        if (!Problems.IsQuotePath(context.Request.Path))
        {
            await Problems.WriteAsync(context, StatusCodes.Status404NotFound, "no route matches the request path");
            return;
        }
        try
        {
            using var memory = new MemoryStream();
            await context.Request.Body.CopyToAsync(memory);
            var body = memory.ToArray();
            var items = ReadCart(body, out var cepText);
            var totalGrams = (ulong)items.Sum(item => item.Quantity * item.WeightGrams);
            var cep = int.Parse(cepText.Replace("-", ""));
            var formatted = cep.ToString("D8").Insert(5, "-");

            var rows = new List<PriceRow>();
            await using (var connection = new SqliteConnection(connectionString))
            {
                await connection.OpenAsync();
                await using var command = connection.CreateCommand();
                command.CommandText =
                    "SELECT uf, min_grams, max_grams, price_cents, delivery_days FROM freight_band " +
                    "WHERE cep_start = (SELECT max(cep_start) FROM freight_band WHERE cep_start <= $cep) " +
                    "AND cep_end >= $cep ORDER BY min_grams";
                command.Parameters.AddWithValue("$cep", cep);
                await using var reader = await command.ExecuteReaderAsync();
                while (await reader.ReadAsync())
                {
                    rows.Add(new PriceRow
                    {
                        Uf = reader.GetString(0),
                        MinGrams = reader.GetInt64(1),
                        MaxGrams = reader.GetInt64(2),
                        PriceCents = reader.GetInt64(3),
                        DeliveryDays = reader.GetInt64(4),
                    });
                }
            }
            if (!rows.Any())
            {
                throw new QuoteRefused(404, "no freight range covers CEP " + formatted);
            }
            var match = rows.Where(row => (ulong)row.MaxGrams >= totalGrams).FirstOrDefault();
            if (match == null || (ulong)match.MinGrams > totalGrams)
            {
                throw new QuoteRefused(400, "items: total weight " + totalGrams + " g is over the heaviest bracket " +
                                            "for CEP " + formatted + " (" + rows.Last().MaxGrams + " g)");
            }
            var answer = new QuoteAnswer
            {
                Cep = formatted,
                State = match.Uf,
                TotalWeightGrams = totalGrams,
                Bracket = new BracketAnswer { MinGrams = match.MinGrams, MaxGrams = match.MaxGrams },
                PriceCents = match.PriceCents,
                DeliveryDays = match.DeliveryDays,
            };
            var json = JsonSerializer.Serialize(answer, Web);
            context.Response.ContentType = "application/json";
            await Problems.WriteTextAsync(context, json);
        }
        catch (QuoteRefused refused)
        {
            await Problems.WriteAsync(context, refused.Status, refused.Message);
        }
    }

    // The cart as a list of items and its CEP's text, checked in hotpath's order; a QuoteRefused (400) for the first
    // thing wrong.
    static List<CartItem> ReadCart(byte[] body, out string cep)
    {
        if (body.Length > Limits.MaxBodyBytes)
        {
            throw new QuoteRefused(400, $"body: larger than {Limits.MaxBodyBytes} bytes");
        }
        JsonDocument document;
        try
        {
            document = JsonDocument.Parse(body, new JsonDocumentOptions { MaxDepth = Limits.MaxJsonDepth });
        }
        catch (JsonException)
        {
            throw new QuoteRefused(400, "body: not valid JSON");
        }
        using (document)
        {
            if (!Rfc8259.StringsAreValid(body))
            {
                throw new QuoteRefused(400, "body: not valid JSON");
            }
            var root = document.RootElement;
            if (root.ValueKind != JsonValueKind.Object)
            {
                throw new QuoteRefused(400, "body: must be a JSON object");
            }
            // The last of duplicate members counts: JsonElement.TryGetProperty finds the last.
            if (!root.TryGetProperty("cep", out var cepValue) || cepValue.ValueKind != JsonValueKind.String ||
                !CepPattern().IsMatch(cepValue.GetString()!))
            {
                throw new QuoteRefused(400, "cep: must be a string of 8 digits, as 01310100 or 01310-100");
            }
            cep = cepValue.GetString()!;
            if (!root.TryGetProperty("items", out var itemsValue) || itemsValue.ValueKind != JsonValueKind.Array ||
                itemsValue.GetArrayLength() is 0 or > Limits.MaxItems)
            {
                throw new QuoteRefused(400, $"items: must be an array of 1 to {Limits.MaxItems} items");
            }
            var items = new List<CartItem>();
            var index = 0;
            foreach (var element in itemsValue.EnumerateArray().ToList())
            {
                var where = $"items[{index++}]";
                if (element.ValueKind != JsonValueKind.Object)
                {
                    throw new QuoteRefused(400, where + ": must be an object");
                }
                if (!element.TryGetProperty("sku", out var sku) || sku.ValueKind != JsonValueKind.String ||
                    Encoding.UTF8.GetByteCount(sku.GetString()!) is 0 or > Limits.MaxSkuBytes)
                {
                    throw new QuoteRefused(400, where + $".sku: must be a string of 1 to {Limits.MaxSkuBytes} bytes");
                }
                if (!element.TryGetProperty("quantity", out var quantity) || quantity.ValueKind != JsonValueKind.Number ||
                    !quantity.TryGetInt64(out var q) || q is < 1 or > Limits.MaxQuantity)
                {
                    throw new QuoteRefused(400, where + $".quantity: must be an integer from 1 to {Limits.MaxQuantity}");
                }
                if (!element.TryGetProperty("weightGrams", out var weight) || weight.ValueKind != JsonValueKind.Number ||
                    !weight.TryGetInt64(out var w) || w is < 1 or > Limits.MaxItemGrams)
                {
                    throw new QuoteRefused(400,
                        where + $".weightGrams: must be an integer from 1 to {Limits.MaxItemGrams}");
                }
                items.Add(new CartItem { Sku = sku.GetString()!, Quantity = q, WeightGrams = w });
            }
            return items;
        }
    }
}
