// SPDX-License-Identifier: MIT
#pragma once
// The model zoo's networks. Internal to ml/: includes LibTorch, so only model.cpp and
// the training benchmark include it.
#include "ml/model.h"

#include <torch/torch.h>

namespace dasp::ml::zoo {

// Base of every zoo network: a module with a forward over NCHW float input.
struct Net : torch::nn::Module {
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

struct LogReg : Net {
  torch::nn::Linear fc{nullptr};
  LogReg(std::int64_t in, std::int64_t classes) {
    fc = register_module("fc", torch::nn::Linear(in, classes));
  }
  torch::Tensor forward(torch::Tensor x) override { return fc(x.flatten(1)); }
};

struct Mlp : Net {
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  Mlp(std::int64_t in, std::int64_t hidden, std::int64_t classes) {
    fc1 = register_module("fc1", torch::nn::Linear(in, hidden));
    fc2 = register_module("fc2", torch::nn::Linear(hidden, classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    return fc2(torch::relu(fc1(x.flatten(1))));
  }
};

// LeNet-5 widths (6, 16, 120, 84) with ReLU and max pooling; the first convolution is
// padded so 28×28 inputs keep the classic 5×5×16 feature map.
struct LeNet : Net {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  LeNet(std::int64_t channels, std::int64_t h, std::int64_t w, std::int64_t classes) {
    conv1 = register_module("conv1", torch::nn::Conv2d(
                                         torch::nn::Conv2dOptions(channels, 6, 5).padding(2)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 16, 5)));
    const std::int64_t fh = (h / 2 - 4) / 2, fw = (w / 2 - 4) / 2;
    fc1 = register_module("fc1", torch::nn::Linear(16 * fh * fw, 120));
    fc2 = register_module("fc2", torch::nn::Linear(120, 84));
    fc3 = register_module("fc3", torch::nn::Linear(84, classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = torch::relu(fc1(x.flatten(1)));
    x = torch::relu(fc2(x));
    return fc3(x);
  }
};

// The Training-Through-Failure CNN (fault-tolerance reference §2): two 3×3 convolutions
// (16, 32) with ReLU and 2×2 max pooling, FC 512 + ReLU, dropout 0.25, FC classes.
// The paper's code also puts a ReLU on the logits; we leave it out on purpose, since it
// zeroes negative logits and stalls the loss for no modelling reason.
struct TtfCnn : Net {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout dropout{nullptr};
  TtfCnn(std::int64_t channels, std::int64_t h, std::int64_t w, std::int64_t classes) {
    conv1 = register_module("conv1", torch::nn::Conv2d(
                                         torch::nn::Conv2dOptions(channels, 16, 3).padding(1)));
    conv2 = register_module("conv2",
                            torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1)));
    fc1 = register_module("fc1", torch::nn::Linear(32 * (h / 4) * (w / 4), 512));
    dropout = register_module("dropout", torch::nn::Dropout(0.25));
    fc2 = register_module("fc2", torch::nn::Linear(512, classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = dropout(torch::relu(fc1(x.flatten(1))));
    return fc2(x);
  }
};

// A basic residual block. GroupNorm instead of BatchNorm: it has no running statistics,
// so the flat parameter buffer is the model's whole state and a parameter server, an
// evaluator or a checkpoint never needs per-worker buffers.
struct BasicBlock : torch::nn::Module {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, shortcut{nullptr};
  torch::nn::GroupNorm norm1{nullptr}, norm2{nullptr}, normShortcut{nullptr};
  BasicBlock(std::int64_t in, std::int64_t out, std::int64_t stride) {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3)
                                                           .stride(stride).padding(1).bias(false)));
    norm1 = register_module("norm1", torch::nn::GroupNorm(4, out));
    conv2 = register_module("conv2", torch::nn::Conv2d(
                                         torch::nn::Conv2dOptions(out, out, 3).padding(1).bias(false)));
    norm2 = register_module("norm2", torch::nn::GroupNorm(4, out));
    if (stride != 1 || in != out) {
      shortcut = register_module(
          "shortcut", torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
      normShortcut = register_module("norm_shortcut", torch::nn::GroupNorm(4, out));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(norm1(conv1(x)));
    y = norm2(conv2(y));
    auto s = shortcut ? normShortcut(shortcut(x)) : x;
    return torch::relu(y + s);
  }
};

// ResNet-8: a 3×3 stem and three stages of one basic block (16, 32, 64 channels),
// global average pooling, a linear classifier. ~78 k parameters.
struct ResNet8 : Net {
  torch::nn::Conv2d stem{nullptr};
  torch::nn::GroupNorm stemNorm{nullptr};
  std::shared_ptr<BasicBlock> block1, block2, block3;
  torch::nn::Linear fc{nullptr};
  ResNet8(std::int64_t channels, std::int64_t classes) {
    stem = register_module("stem", torch::nn::Conv2d(
                                       torch::nn::Conv2dOptions(channels, 16, 3).padding(1).bias(false)));
    stemNorm = register_module("stem_norm", torch::nn::GroupNorm(4, 16));
    block1 = register_module("block1", std::make_shared<BasicBlock>(16, 16, 1));
    block2 = register_module("block2", std::make_shared<BasicBlock>(16, 32, 2));
    block3 = register_module("block3", std::make_shared<BasicBlock>(32, 64, 2));
    fc = register_module("fc", torch::nn::Linear(64, classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(stemNorm(stem(x)));
    x = block3->forward(block2->forward(block1->forward(x)));
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc(x);
  }
};

// Builds the network options.name for the input shape; an error names what is wrong.
Result<std::shared_ptr<Net>> makeNet(const ModelOptions& options);

}  // namespace dasp::ml::zoo

namespace dasp::ml {
// The device a name means on this build and machine (see resolveDeviceName in model.h).
Result<torch::Device> resolveDevice(const std::string& name);
}  // namespace dasp::ml
