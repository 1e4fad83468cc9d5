"""The four GPT-2 numerics profiles of NUMERICS.md section 6 applied to transformers' real
GPT2LMHeadModel (eager attention) on PyTorch CPU: shared by gen_profile_goldens.py and
dump_activations.py. See gen_profile_goldens.py for what each profile replaces.
"""
import torch
import torch.nn.functional as F
from transformers import GPT2LMHeadModel
from transformers.models.gpt2 import modeling_gpt2

PROFILES = ["hf", "hf-legacy", "meg", "megatron"]
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
ORIGINAL_EAGER = modeling_gpt2.eager_attention_forward


class MegatronGelu(torch.nn.Module):
    """Megatron-LM fused_bias_gelu.bias_gelu as written, the bias already added by c_fc. It is a
    torch.jit.script function there; TorchScript does not fuse on CPU, so it runs op by op."""

    def forward(self, x):
        return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


# ---- Megatron-LM fused_bias_gelu.py, as plain ops, with its custom backward --------------------------
# (torch.jit.script runs these op by op on CPU.) Shared by the goldens of the GELU ops, the activation
# backward and the model's gradients.
def bias_gelu(bias, y):
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


def bias_gelu_back(g, bias, y):
    x = bias + y
    tanh_out = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
    # sqrt(2/pi) * 3 * 0.044715 -> 0.1070322243
    ff = 0.5 * x * ((1 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + tanh_out)
    return ff * g


class GeLUFunction(torch.autograd.Function):
    """Megatron-LM's GeLUFunction: bias_gelu forward, bias_gelu_back backward, the same tensor for input and bias."""

    @staticmethod
    def forward(ctx, input, bias):
        ctx.save_for_backward(input, bias)
        return bias_gelu(bias, input)

    @staticmethod
    def backward(ctx, grad_output):
        input, bias = ctx.saved_tensors
        tmp = bias_gelu_back(grad_output, bias, input)
        return tmp, tmp


class MegatronFusedGeLU(GeLUFunction):
    """gptmeg's megatron profile: the forward fused in f32 (input.float() + bias.float(), one rounding, as
    MegatronMLP below), Megatron's backward as written, in the dtype."""

    @staticmethod
    def forward(ctx, input, bias):
        ctx.save_for_backward(input, bias)
        x = input.float() + bias.float()
        return (x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))).to(input.dtype)


def layer_norm_f32(ln):
    def forward(x):
        return F.layer_norm(x.float(), ln.normalized_shape, ln.weight.float(), ln.bias.float(), ln.eps).to(x.dtype)
    return forward


def causal(module, q, k):
    ql, kl = q.size(-2), k.size(-2)
    return module.bias[:, :, kl - ql: kl, :kl]


def legacy_attention(module, query, key, value, attention_mask, head_mask=None, **kwargs):
    w = torch.matmul(query, key.transpose(-1, -2))
    if module.scale_attn_weights:
        w = w / torch.full([], value.size(-1) ** 0.5, dtype=w.dtype)
    if module.scale_attn_by_inverse_layer_idx:
        w = w / float(module.layer_idx + 1)
    w = torch.where(causal(module, query, key), w, torch.tensor(-1e4).to(w.dtype))
    w = F.softmax(w, dim=-1).type(value.dtype)
    return torch.matmul(w, value).transpose(1, 2), w


def scale_factor(module, hd):
    s = 1.0
    if module.scale_attn_weights:
        s /= float(hd) ** 0.5
    if module.scale_attn_by_inverse_layer_idx:
        s /= float(module.layer_idx + 1)
    return s


def baddbmm_scores(module, query, key, alpha):
    b, h, tq, hd = query.shape
    tk = key.size(-2)
    q = query.reshape(-1, tq, hd)
    kt = key.transpose(-1, -2).reshape(-1, hd, tk)
    w = torch.baddbmm(torch.empty(b * h, tq, tk, dtype=query.dtype), q, kt, beta=0, alpha=alpha)
    return w.reshape(b, h, tq, tk)


def meg_attention(module, query, key, value, attention_mask, head_mask=None, **kwargs):
    w = baddbmm_scores(module, query, key, scale_factor(module, value.size(-1)))
    w = torch.where(causal(module, query, key), w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
    w = F.softmax(w, dim=-1).type(value.dtype)
    return torch.matmul(w, value).transpose(1, 2), w


def megatron_attention(module, query, key, value, attention_mask, head_mask=None, **kwargs):
    coeff = float(module.layer_idx + 1)
    w = baddbmm_scores(module, query, key, scale_factor(module, value.size(-1)) / coeff)
    x = w.float() * coeff  # FusedScaleMaskSoftmax, torch path, softmax_in_fp32
    x = x.masked_fill(~causal(module, query, key), -10000.0)
    p = F.softmax(x, dim=-1).to(value.dtype)
    return torch.matmul(p, value).transpose(1, 2), p


class MegatronMLP(torch.nn.Module):
    """c_fc without its bias, Megatron's bias-GELU fused in f32 (one rounding), then c_proj."""

    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, h):
        fc = self.mlp.c_fc
        y = torch.matmul(h, fc.weight)  # x @ W in the dtype, rounded once
        x = y.float() + fc.bias.float()
        g = (x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))).to(h.dtype)
        return self.mlp.c_proj(g)


def load(model_dir, profile, dtype):
    """The checkpoint of model_dir in dtype (model.to(dtype)) with profile's modules swapped in."""
    model = GPT2LMHeadModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    model = model.to(dtype)
    model.gm_profile = profile
    if profile in ("meg", "megatron"):
        for blk in model.transformer.h:
            blk.attn.reorder_and_upcast_attn = False
        for ln in [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]:
            ln.forward = layer_norm_f32(ln)
        for blk in model.transformer.h:
            if profile == "meg":
                blk.mlp.act = MegatronGelu()
            else:
                blk.mlp = MegatronMLP(blk.mlp)
    return model


def run(model, tokens):
    """Logits of tokens [B, T] (numpy int) under the model's profile (its attention function is
    patched into transformers for the duration of the call)."""
    return _patched(model, lambda: model(torch.as_tensor(tokens)).logits)


def generate(model, tokens, n):
    """Greedy generate(output_logits=True) of up to n tokens after tokens [1, T] (numpy int) under the
    model's profile, as a user runs it (KV cache, logits_to_keep = 1 in the prefill): the logits
    [steps, V] each new token was drawn from, as float32."""
    ids = torch.as_tensor(tokens)
    out = _patched(model, lambda: model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                                   max_new_tokens=n, output_logits=True, return_dict_in_generate=True,
                                                   pad_token_id=model.config.eos_token_id))
    return torch.stack([x[0] for x in out.logits]).float()


def _patched(model, fn):
    attention = {"hf": ORIGINAL_EAGER, "hf-legacy": legacy_attention, "meg": meg_attention,
                 "megatron": megatron_attention}[model.gm_profile]
    modeling_gpt2.eager_attention_forward = attention
    try:
        with torch.no_grad():
            return fn()
    finally:
        modeling_gpt2.eager_attention_forward = ORIGINAL_EAGER
