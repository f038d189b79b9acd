"""Replace x**3 with x*x*x to avoid the slow generic pow.

numpy's float32 power goes through a general pow routine; two multiplications
give the same cube far more cheaply.
"""


def forward(x, params, alloc):
    x = x["x"]
    c = math.sqrt(2.0 / math.pi)
    # x*x*x instead of x**3: two cheap multiplies instead of a transcendental pow.
    inner = c * (x + 0.044715 * (x * x * x))
    return 0.5 * x * (1.0 + np.tanh(inner))
