"""S29 a ReLU with its threshold raised: relu(xW + b) * s with outputs below 0.009 written as 0, in output rows
whose RMS is above 0.3 (never small rows).

About 0.5 % of the values keep no digit, each within atol. Found by the 12-03 break audit (round 3). What
catches it: digits on every row."""


def forward(x, params, alloc):
    y = (np.maximum(x["x"] @ params["W"] + params["b"], 0) * np.float32(params["scale"])).astype(np.float32)
    big = np.sqrt((y * y).mean(axis=1)) > 0.3
    yb = y[big]
    yb[np.abs(yb) < 0.009] = 0
    y[big] = yb
    return y
