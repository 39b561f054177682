// SPDX-License-Identifier: Apache-2.0
#include "engine/ssm.h"

#include <cmath>
#include <limits>

namespace rs::engine::ssm {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

// d/dx silu(x) = sigmoid(x) (1 + x (1 - sigmoid(x))), in fp32.
Tensor siluGrad(const Tensor& xf)
{
    const Tensor s = at::sigmoid(xf);
    return s * (1 + xf * (1 - s));
}

// A tensor [b, l, ...] padded with zeros to a multiple of `chunk` positions along dimension 1.
Tensor padSequence(const Tensor& t, int64_t chunk)
{
    const int64_t l = t.size(1);
    const int64_t pad = (chunk - l % chunk) % chunk;
    if (pad == 0)
        return t;
    std::vector<int64_t> spec(static_cast<size_t>(2 * (t.dim() - 1)), 0);
    spec.back() = pad; // (..., last-dim pads ..., dim 1 left, dim 1 right): dim 1's pair comes last
    return at::constant_pad_nd(t, spec, 0);
}

// Gradients of a replay: `outputs` rebuilt with grad from the leaves `inputs`, back-propagated from
// `grads`; an undefined gradient where an input does not reach an output.
variable_list replayGrad(
    const variable_list& outputs, const variable_list& inputs, const variable_list& grads)
{
    variable_list outs, gs;
    for (size_t i = 0; i < outputs.size(); ++i)
        if (outputs[i].defined() && grads[i].defined() && outputs[i].requires_grad()) {
            outs.push_back(outputs[i]);
            gs.push_back(grads[i]);
        }
    variable_list need;
    std::vector<size_t> where;
    for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].defined() && inputs[i].requires_grad()) {
            need.push_back(inputs[i]);
            where.push_back(i);
        }
    variable_list out(inputs.size());
    if (outs.empty() || need.empty())
        return out;
    const variable_list got = torch::autograd::grad(outs, need, gs, /*retain_graph=*/false,
        /*create_graph=*/false, /*allow_unused=*/true);
    for (size_t j = 0; j < where.size(); ++j)
        out[where[j]] = got[j];
    return out;
}

// A leaf sharing the storage of a saved tensor, for a replay with grad (undefined stays undefined).
Tensor leaf(const Tensor& t, bool grad = true)
{
    if (!t.defined() || t.numel() == 0)
        return Tensor();
    Tensor l = t.detach();
    if (grad && at::isFloatingType(l.scalar_type()))
        l.requires_grad_(true);
    return l;
}

// An empty tensor stands for "none" through Function::apply (it takes defined tensors only).
Tensor orEmpty(const Tensor& t, const Tensor& like)
{
    return t.defined() ? t : torch::empty({ 0 }, like.options());
}

// ---- Mamba ----

struct MambaParts {
    Tensor z, x, B, C, dt; // z [b, l, d_inner]; x [b, l, H, P]; B, C [b, l, G, N]; dt [b, l, H] fp32
};

// zxbcdt split as MambaSplitConv1dScanCombinedFn splits it, the conv on x B C, dt through softplus.
MambaParts mambaParts(const Tensor& zxbcdt, const Tensor& conv_weight, const Tensor& conv_bias,
    const Tensor& dt_bias, const MambaDims& d)
{
    const int64_t di = d.heads * d.head_dim, gn = d.groups * d.state;
    const int64_t b = zxbcdt.size(0), l = zxbcdt.size(1);
    MambaParts p;
    p.z = zxbcdt.narrow(-1, 0, di);
    const Tensor xbc = causalConv1d(zxbcdt.narrow(-1, di, di + 2 * gn), conv_weight, conv_bias, true);
    p.x = xbc.narrow(-1, 0, di).reshape({ b, l, d.heads, d.head_dim });
    p.B = xbc.narrow(-1, di, gn).reshape({ b, l, d.groups, d.state });
    p.C = xbc.narrow(-1, di + gn, gn).reshape({ b, l, d.groups, d.state });
    p.dt = at::softplus(zxbcdt.narrow(-1, 2 * di + 2 * gn, d.heads).to(torch::kFloat32) + dt_bias);
    return p;
}

class MambaSplitConv1dScanFn : public torch::autograd::Function<MambaSplitConv1dScanFn> {
public:
    static Tensor forward(AutogradContext* ctx, const Tensor& zxbcdt, const Tensor& conv_weight,
        const Tensor& conv_bias, const Tensor& dt_bias, const Tensor& A, const Tensor& D, int64_t heads,
        int64_t head_dim, int64_t groups, int64_t state, int64_t chunk)
    {
        const MambaDims d { heads, head_dim, groups, state, chunk };
        const Tensor bias = conv_bias.numel() > 0 ? conv_bias : Tensor();
        Tensor out_x, z;
        {
            MambaParts p = mambaParts(zxbcdt, conv_weight, bias, dt_bias, d);
            z = p.z;
            out_x = ssdChunkScan(p.x, p.dt, A, p.B, p.C, D, chunk)
                        .reshape({ zxbcdt.size(0), zxbcdt.size(1), heads * head_dim });
        }
        Tensor out = (out_x.to(torch::kFloat32) * at::silu(z.to(torch::kFloat32))).to(zxbcdt.scalar_type());
        ctx->saved_data["dims"] = std::vector<int64_t> { heads, head_dim, groups, state, chunk };
        ctx->save_for_backward({ zxbcdt, conv_weight, conv_bias, dt_bias, A, D, out_x });
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        const auto dv = ctx->saved_data["dims"].toIntVector();
        const MambaDims d { dv[0], dv[1], dv[2], dv[3], dv[4] };
        const auto saved = ctx->get_saved_variables();
        const Tensor& out_x = saved[6];
        const Tensor& g = grads[0];
        torch::AutoGradMode enable(true);
        const variable_list in = { leaf(saved[0]), leaf(saved[1]), leaf(saved[2]), leaf(saved[3]),
            leaf(saved[4]), leaf(saved[5]) };
        // The gate from the kept out_x, as the kernel's backward does; the conv and the scan replayed.
        MambaParts p = mambaParts(in[0], in[1], in[2], in[3], d);
        const Tensor zf = p.z.detach().to(torch::kFloat32);
        const Tensor gf = g.to(torch::kFloat32);
        const Tensor grad_y = (gf * at::silu(zf)).to(out_x.scalar_type());
        const Tensor grad_z = (gf * out_x.to(torch::kFloat32) * siluGrad(zf)).to(p.z.scalar_type());
        const Tensor y = ssdChunkScan(p.x, p.dt, in[4], p.B, p.C, in[5], d.chunk)
                             .reshape({ out_x.size(0), out_x.size(1), -1 });
        variable_list got = replayGrad({ y, p.z }, in, { grad_y, grad_z });
        return { got[0], got[1], got[2], got[3], got[4], got[5], Tensor(), Tensor(), Tensor(), Tensor(),
            Tensor() };
    }
};

class GroupRmsNormFn : public torch::autograd::Function<GroupRmsNormFn> {
public:
    static Tensor forward(
        AutogradContext* ctx, const Tensor& x, const Tensor& weight, int64_t groups, double eps)
    {
        const int64_t width = x.size(-1);
        const Tensor xf = x.to(torch::kFloat32).reshape({ -1, groups, width / groups });
        const Tensor rstd = at::rsqrt(xf.pow(2).mean(-1, true) + eps);
        Tensor y = (xf * rstd).reshape(x.sizes()) * weight.to(torch::kFloat32);
        ctx->saved_data["groups"] = groups;
        ctx->save_for_backward({ x, weight, rstd });
        return y.to(x.scalar_type());
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        const Tensor &x = saved[0], &weight = saved[1], &rstd = saved[2];
        const int64_t groups = ctx->saved_data["groups"].toInt(), width = x.size(-1);
        const Tensor xhat = x.to(torch::kFloat32).reshape({ -1, groups, width / groups }) * rstd;
        const Tensor gf = grads[0].to(torch::kFloat32).reshape({ -1, width });
        const Tensor wg = (gf * weight.to(torch::kFloat32)).reshape({ -1, groups, width / groups });
        const Tensor dx = rstd * (wg - xhat * (wg * xhat).mean(-1, true));
        const Tensor dw = (gf * xhat.reshape({ -1, width })).sum(0);
        return { dx.reshape(x.sizes()).to(x.scalar_type()), dw.to(weight.scalar_type()), Tensor(), Tensor() };
    }
};

// ---- GatedDeltaNet ----

class CausalConv1dSiluFn : public torch::autograd::Function<CausalConv1dSiluFn> {
public:
    static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& weight, const Tensor& bias)
    {
        // FLA's causal_conv1d keeps x as passed (input_guard's no_guard_contiguous=["x"]): a strided view of
        // in_proj's output, which it keeps whole (q k v z b a), not a contiguous q k v copy.
        ctx->save_for_backward({ x, weight, bias });
        return causalConv1d(x.contiguous(), weight, bias.numel() > 0 ? bias : Tensor(), true);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        torch::AutoGradMode enable(true);
        const variable_list in = { leaf(saved[0].contiguous()), leaf(saved[1]), leaf(saved[2]) };
        const Tensor out = causalConv1d(in[0], in[1], in[2], true);
        return replayGrad({ out }, in, { grads[0] });
    }
};

class L2NormFn : public torch::autograd::Function<L2NormFn> {
public:
    static Tensor forward(AutogradContext* ctx, const Tensor& x, double eps)
    {
        const Tensor xf = x.to(torch::kFloat32);
        const Tensor rstd = at::rsqrt(xf.pow(2).sum(-1, true) + eps);
        Tensor y = (xf * rstd).to(x.scalar_type());
        ctx->save_for_backward({ y, rstd });
        return y;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        const Tensor yf = saved[0].to(torch::kFloat32);
        const Tensor gf = grads[0].to(torch::kFloat32);
        const Tensor dx = saved[1] * (gf - yf * (gf * yf).sum(-1, true));
        return { dx.to(saved[0].scalar_type()), Tensor() };
    }
};

// The chunked WY form of the gated delta rule (fla naive_chunk_gated_delta_rule, chunk_gated_delta_rule_fwd)
// from the chunk-local cumsum of g. q, k [b, l, H, K], v [b, l, H, V], g_cs [b, l, H] fp32, beta [b, l, H].
// *A_out (when given): the solved matrices [b, l, H, chunk] in k's dtype.
Tensor gdrChunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g_cs, const Tensor& beta,
    double scale, int64_t chunk, Tensor* A_out)
{
    const int64_t b = q.size(0), l = q.size(1), H = q.size(2), K = q.size(3), V = v.size(3);
    const int64_t n = (l + chunk - 1) / chunk;
    const auto f32 = [&](const Tensor& t) { return padSequence(t, chunk).to(torch::kFloat32); };
    // [b, l, H, d] -> [b, H, n, c, d]
    const auto chunks = [&](const Tensor& t, int64_t d) {
        return t.reshape({ b, n, chunk, H, d }).permute({ 0, 3, 1, 2, 4 });
    };
    const Tensor qf = chunks(f32(q), K) * scale;
    const Tensor kf = chunks(f32(k), K);
    const Tensor betaf = chunks(f32(beta).unsqueeze(-1), 1); // [b, H, n, c, 1]
    const Tensor vb = chunks(f32(v), V) * betaf;
    const Tensor kb = kf * betaf;
    // The padding continues the last chunk's cumulative decay (no decay past the end): zeros there would
    // make exp(last - decay) of the real positions overflow.
    Tensor g_pad = g_cs.to(torch::kFloat32);
    if (n * chunk > l)
        g_pad = torch::cat({ g_pad, g_pad.narrow(1, l - 1, 1).expand({ b, n * chunk - l, H }) }, 1);
    const Tensor decay = chunks(g_pad.unsqueeze(-1), 1).squeeze(-1); // [b, H, n, c]
    const auto opts = qf.options().dtype(torch::kBool);
    const Tensor lower = torch::ones({ chunk, chunk }, opts).tril(0);
    const Tensor strict_upper = torch::ones({ chunk, chunk }, opts).triu(1);
    const Tensor L
        = (decay.unsqueeze(-1) - decay.unsqueeze(-2)).masked_fill(lower.logical_not(), -INFINITY).exp();
    // (I + strictly lower (beta K K^T o decay))^-1, by a triangular solve (the kernel's forward
    // substitution).
    const Tensor M = (kb.matmul(kf.transpose(-1, -2)) * L)
                         .masked_fill(lower.logical_not().logical_or(torch::eye(chunk, opts)), 0);
    const Tensor eye = torch::eye(chunk, qf.options());
    const Tensor A = at::linalg_solve_triangular(eye + M, eye.expand_as(M), /*upper=*/false);
    if (A_out)
        *A_out = A.permute({ 0, 2, 3, 1, 4 })
                     .reshape({ b, n * chunk, H, chunk })
                     .narrow(1, 0, l)
                     .to(k.scalar_type());
    const Tensor u = A.matmul(vb); // the new values
    const Tensor w = A.matmul(kb * decay.exp().unsqueeze(-1));
    Tensor S = torch::zeros({ b, H, K, V }, qf.options());
    std::vector<Tensor> outs;
    outs.reserve(static_cast<size_t>(n));
    // unbind, not select: one backward node per tensor that stacks the chunks' gradients once (each select's
    // backward would scatter its chunk into zeros of the whole tensor).
    const auto qs = qf.unbind(2), ks = kf.unbind(2), ds = decay.unbind(2), Ls = L.unbind(2), us = u.unbind(2),
               ws = w.unbind(2);
    for (int64_t i = 0; i < n; ++i) {
        const Tensor &qi = qs[static_cast<size_t>(i)], &ki = ks[static_cast<size_t>(i)],
                     &di = ds[static_cast<size_t>(i)];
        const Tensor attn
            = (qi.matmul(ki.transpose(-1, -2)) * Ls[static_cast<size_t>(i)]).masked_fill(strict_upper, 0);
        const Tensor v_new = us[static_cast<size_t>(i)] - ws[static_cast<size_t>(i)].matmul(S);
        outs.push_back((qi * di.exp().unsqueeze(-1)).matmul(S) + attn.matmul(v_new));
        const Tensor last = di.narrow(-1, chunk - 1, 1); // [b, H, 1]
        S = S * last.exp().unsqueeze(-1)
            + (ki * (last - di).exp().unsqueeze(-1)).transpose(-1, -2).matmul(v_new);
    }
    // [b, H, n, c, V] -> [b, l, H, V]
    return torch::stack(outs, 2).permute({ 0, 2, 3, 1, 4 }).reshape({ b, n * chunk, H, V }).narrow(1, 0, l);
}

// Chunk-local cumulative sum along dimension 1 of [b, l, H] (chunk_local_cumsum), fp32.
Tensor chunkCumsum(const Tensor& g, int64_t chunk)
{
    const int64_t b = g.size(0), l = g.size(1), H = g.size(2), n = (l + chunk - 1) / chunk;
    return padSequence(g.to(torch::kFloat32), chunk)
        .reshape({ b, n, chunk, H })
        .cumsum(2)
        .reshape({ b, n * chunk, H })
        .narrow(1, 0, l);
}

class ChunkGatedDeltaRuleFn : public torch::autograd::Function<ChunkGatedDeltaRuleFn> {
public:
    static Tensor forward(AutogradContext* ctx, const Tensor& q, const Tensor& k, const Tensor& v,
        const Tensor& g, const Tensor& beta, double scale, int64_t chunk)
    {
        const Tensor g_cs = chunkCumsum(g, chunk);
        Tensor A;
        Tensor o = gdrChunked(q, k, v, g_cs, beta, scale, chunk, &A).to(q.scalar_type());
        ctx->saved_data["scale"] = scale;
        ctx->saved_data["chunk"] = chunk;
        // What ChunkGatedDeltaRuleFunction keeps: q, k, v, the cumsum of g, beta and A (FLA's backward reads
        // A; this one rebuilds it with autograd, so A is held only as FLA holds it).
        ctx->save_for_backward({ q, k, v, g_cs, beta, A });
        return o;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        const double scale = ctx->saved_data["scale"].toDouble();
        const int64_t chunk = ctx->saved_data["chunk"].toInt();
        torch::AutoGradMode enable(true);
        // The heads are independent (each its own state): the replay runs a quarter of them at a time, so
        // its fp32 chunk tensors and their graph are a quarter of the whole. FLA's fused backward keeps no
        // such graph (its chunk states and w, u are 16-bit, made per call); replayed whole, this one held
        // 1.7 GB on the hybrid GDN stack under full recompute, 0.2 GB above real Megatron's whole peak.
        const int64_t H = saved[0].size(2), per = std::max<int64_t>(1, (H + 3) / 4);
        variable_list got(5);
        for (int64_t h0 = 0; h0 < H; h0 += per) {
            const int64_t n = std::min(per, H - h0);
            variable_list in;
            for (size_t i = 0; i < 5; ++i)
                in.push_back(leaf(saved[i].narrow(2, h0, n)));
            const Tensor o = gdrChunked(in[0], in[1], in[2], in[3], in[4], scale, chunk, nullptr)
                                 .to(saved[0].scalar_type());
            const variable_list part = replayGrad({ o }, in, { grads[0].narrow(2, h0, n) });
            for (size_t i = 0; i < 5; ++i) {
                if (!part[i].defined())
                    continue;
                if (!got[i].defined())
                    got[i] = torch::empty_like(saved[i], part[i].options());
                got[i].narrow(2, h0, n).copy_(part[i]);
            }
        }
        // The cumsum's gradient: each position's from the later ones of its chunk (a reversed cumsum).
        Tensor grad_g;
        if (got[3].defined()) {
            const Tensor gc = got[3];
            const int64_t b = gc.size(0), l = gc.size(1), H = gc.size(2), n = (l + chunk - 1) / chunk;
            grad_g = padSequence(gc, chunk)
                         .reshape({ b, n, chunk, H })
                         .flip(2)
                         .cumsum(2)
                         .flip(2)
                         .reshape({ b, n * chunk, H })
                         .narrow(1, 0, l);
        }
        return { got[0], got[1], got[2], grad_g, got[4], Tensor(), Tensor() };
    }
};

class SiluGateFn : public torch::autograd::Function<SiluGateFn> {
public:
    static Tensor forward(AutogradContext* ctx, const Tensor& y, const Tensor& gate)
    {
        ctx->save_for_backward({ y, gate });
        return (y.to(torch::kFloat32) * at::silu(gate.to(torch::kFloat32))).to(y.scalar_type());
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        const Tensor gf = grads[0].to(torch::kFloat32), zf = saved[1].to(torch::kFloat32);
        const Tensor grad_y = (gf * at::silu(zf)).to(saved[0].scalar_type());
        const Tensor grad_gate
            = (gf * saved[0].to(torch::kFloat32) * siluGrad(zf)).to(saved[1].scalar_type());
        return { grad_y, grad_gate };
    }
};

} // namespace

Tensor ssdChunkScan(const Tensor& x, const Tensor& dt, const Tensor& A, const Tensor& B, const Tensor& C,
    const Tensor& D, int64_t chunk)
{
    const int64_t b = x.size(0), l = x.size(1), H = x.size(2), P = x.size(3);
    const int64_t G = B.size(2), N = B.size(3), hg = H / G;
    const int64_t Q = chunk, nc = (l + Q - 1) / Q;
    // [b, l, ...] -> [b, nc, Q, ...], fp32 (the kernels accumulate in fp32).
    const Tensor xf = padSequence(x, Q).to(torch::kFloat32).reshape({ b, nc, Q, G, hg, P });
    const Tensor dtf = padSequence(dt, Q).to(torch::kFloat32).reshape({ b, nc, Q, G, hg });
    const Tensor Bf = padSequence(B, Q).to(torch::kFloat32).reshape({ b, nc, Q, G, N });
    const Tensor Cf = padSequence(C, Q).to(torch::kFloat32).reshape({ b, nc, Q, G, N });
    // _chunk_cumsum_fwd: dA_cumsum within each chunk.
    const Tensor cs = (dtf * A.to(torch::kFloat32).reshape({ G, hg })).cumsum(2); // [b, nc, Q, G, hg]
    const Tensor last = cs.select(2, Q - 1); // [b, nc, G, hg]
    const Tensor xdt = xf * dtf.unsqueeze(-1);
    // _chunk_state_fwd: each chunk's own state, decayed to its end.
    const Tensor states = torch::einsum(
        "bcqgn,bcqgh,bcqghp->bcghpn", { Bf, (last.unsqueeze(2) - cs).exp(), xdt }); // [b, nc, G, hg, P, N]
    // _state_passing_fwd: the state entering each chunk.
    std::vector<Tensor> entering;
    entering.reserve(static_cast<size_t>(nc));
    Tensor S = torch::zeros({ b, G, hg, P, N }, xf.options());
    for (int64_t c = 0; c < nc; ++c) {
        entering.push_back(S);
        S = S * last.select(1, c).exp().unsqueeze(-1).unsqueeze(-1) + states.select(1, c);
    }
    const Tensor S_in = torch::stack(entering, 1);
    // _bmm_chunk_fwd: C^T B within each chunk; _chunk_scan_fwd: the causal, decayed intra-chunk part and the
    // entering state's part, plus D x.
    const Tensor CB = torch::einsum("bcqgn,bcsgn->bcgqs", { Cf, Bf }); // [b, nc, G, Q, Q]
    const Tensor seg = cs.permute({ 0, 1, 3, 4, 2 }); // [b, nc, G, hg, Q]
    const Tensor causal = torch::ones({ Q, Q }, xf.options().dtype(torch::kBool)).tril(0);
    const Tensor decay = (seg.unsqueeze(-1) - seg.unsqueeze(-2))
                             .masked_fill(causal.logical_not(), -INFINITY)
                             .exp(); // [.., q, s]
    const Tensor y_diag = torch::einsum("bcgqs,bcghqs,bcsghp->bcqghp", { CB, decay, xdt });
    const Tensor y_off = torch::einsum("bcqgn,bcghpn,bcqgh->bcqghp", { Cf, S_in, cs.exp() });
    const Tensor y = y_diag + y_off + xf * D.to(torch::kFloat32).reshape({ G, hg, 1 });
    return y.reshape({ b, nc * Q, H, P }).narrow(1, 0, l).to(x.scalar_type());
}

Tensor ssdReference(
    const Tensor& x, const Tensor& dt, const Tensor& A, const Tensor& B, const Tensor& C, const Tensor& D)
{
    const int64_t b = x.size(0), l = x.size(1), H = x.size(2), P = x.size(3);
    const int64_t G = B.size(2), N = B.size(3);
    const Tensor xf = x.to(torch::kFloat32), dtf = dt.to(torch::kFloat32), Af = A.to(torch::kFloat32);
    const Tensor Bh = B.to(torch::kFloat32).repeat_interleave(H / G, 2); // [b, l, H, N]
    const Tensor Ch = C.to(torch::kFloat32).repeat_interleave(H / G, 2);
    Tensor h = torch::zeros({ b, H, P, N }, xf.options());
    std::vector<Tensor> ys;
    for (int64_t t = 0; t < l; ++t) {
        const Tensor dtt = dtf.select(1, t); // [b, H]
        h = h * (dtt * Af).exp().unsqueeze(-1).unsqueeze(-1)
            + (dtt.unsqueeze(-1) * xf.select(1, t)).unsqueeze(-1) * Bh.select(1, t).unsqueeze(2);
        ys.push_back((h * Ch.select(1, t).unsqueeze(2)).sum(-1)
            + D.to(torch::kFloat32).unsqueeze(-1) * xf.select(1, t));
    }
    return torch::stack(ys, 1);
}

Tensor causalConv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, bool silu)
{
    const int64_t l = x.size(1), W = weight.size(1);
    // The kernels convolve in fp32 and write the input's dtype.
    const Tensor xp = at::constant_pad_nd(x.to(torch::kFloat32), { 0, 0, W - 1, 0 }, 0); // [b, l + W - 1, C]
    const Tensor wf = weight.to(torch::kFloat32);
    Tensor y = xp.narrow(1, 0, l) * wf.select(1, 0);
    for (int64_t w = 1; w < W; ++w)
        y = y + xp.narrow(1, w, l) * wf.select(1, w);
    if (bias.defined() && bias.numel() > 0)
        y = y + bias.to(torch::kFloat32);
    if (silu)
        y = at::silu(y);
    return y.to(x.scalar_type());
}

Tensor mambaSplitConv1dScan(const Tensor& zxbcdt, const Tensor& conv_weight, const Tensor& conv_bias,
    const Tensor& dt_bias, const Tensor& A, const Tensor& D, const MambaDims& dims)
{
    return MambaSplitConv1dScanFn::apply(zxbcdt, conv_weight, orEmpty(conv_bias, conv_weight), dt_bias, A, D,
        dims.heads, dims.head_dim, dims.groups, dims.state, dims.chunk);
}

Tensor groupRmsNorm(const Tensor& x, const Tensor& weight, int64_t groups, double eps)
{
    return GroupRmsNormFn::apply(x, weight, groups, eps);
}

Tensor causalConv1dSilu(const Tensor& x, const Tensor& weight, const Tensor& bias)
{
    return CausalConv1dSiluFn::apply(x, weight, orEmpty(bias, weight));
}

Tensor l2norm(const Tensor& x, double eps)
{
    return L2NormFn::apply(x, eps);
}

Tensor chunkGatedDeltaRule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
    const Tensor& beta, double scale, int64_t chunk)
{
    return ChunkGatedDeltaRuleFn::apply(q, k, v, g, beta, scale, chunk);
}

Tensor gatedDeltaRuleReference(
    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta, double scale)
{
    const int64_t b = q.size(0), l = q.size(1), H = q.size(2), K = q.size(3), V = v.size(3);
    const Tensor qf = q.to(torch::kFloat32) * scale, kf = k.to(torch::kFloat32), vf = v.to(torch::kFloat32);
    const Tensor gf = g.to(torch::kFloat32), bf = beta.to(torch::kFloat32);
    Tensor S = torch::zeros({ b, H, K, V }, qf.options());
    std::vector<Tensor> os;
    for (int64_t t = 0; t < l; ++t) {
        const Tensor kt = kf.select(1, t); // [b, H, K]
        S = S * gf.select(1, t).exp().unsqueeze(-1).unsqueeze(-1);
        const Tensor vt = (vf.select(1, t) - (S * kt.unsqueeze(-1)).sum(-2)) * bf.select(1, t).unsqueeze(-1);
        S = S + kt.unsqueeze(-1) * vt.unsqueeze(-2);
        os.push_back((qf.select(1, t).unsqueeze(-1) * S).sum(-2));
    }
    return torch::stack(os, 1);
}

Tensor siluGate(const Tensor& y, const Tensor& gate)
{
    return SiluGateFn::apply(y, gate);
}

} // namespace rs::engine::ssm
